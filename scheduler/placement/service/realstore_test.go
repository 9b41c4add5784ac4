package service

import (
	"context"
	"sort"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/telemetry"
	"github.com/gpuwatch/gpuwatch/telemetry/store/remote"
	"github.com/gpuwatch/gpuwatch/test/realstore"
)

// TestFeedStragglersRealStores: the feeder's straggler marks behind --store.url,
// on Debian's VictoriaMetrics and Prometheus: their subquery and timestamp()
// give each mark its last sample time, as the embedded store does
// (TestFeedStragglers). node-00 GPU 3 named every 15 s from 20 to 4 minutes ago
// (marked, named 4 minutes ago), node-01 GPU 5 from 50 to 40 minutes ago (past
// the 30-minute window), node-01 GPU 2 named 10 s ago (marked, named 10 s ago).
func TestFeedStragglersRealStores(t *testing.T) {
	for _, start := range []func(testing.TB) *realstore.Server{realstore.StartVictoriaMetrics, realstore.StartPrometheus} {
		s := start(t)
		t.Run(s.Kind(), func(t *testing.T) {
			now := time.Now().Truncate(time.Second)
			samples := fleetSamples(2, 2, now.Add(-2*time.Second))
			named := func(node, uuid string, from, to time.Duration) {
				for at := now.Add(-from); !at.After(now.Add(-to)); at = at.Add(15 * time.Second) {
					samples = append(samples, sample(telemetry.MetricStragglerGPU, 0.3, at, "job", "gpuwatch-server", "job_id", "train-b",
						"node", node, "gpu_uuid", uuid, "signal", "power"))
				}
			}
			named("node-00", "GPU-00-3", 20*time.Minute, 4*time.Minute)
			named("node-01", "GPU-01-5", 50*time.Minute, 40*time.Minute)
			named("node-01", "GPU-01-2", 10*time.Second, 10*time.Second)
			sort.SliceStable(samples, func(i, j int) bool { return samples[i].Time.Before(samples[j].Time) })
			s.WriteEvery(samples, 5*time.Minute)
			q, err := remote.New(s.URL(), remote.Options{})
			if err != nil {
				t.Fatal(err)
			}
			deadline := time.Now().Add(60 * time.Second)
			for {
				snap, _, err := Feed(context.Background(), q, FeedOptions{Now: now})
				if err != nil {
					t.Fatal(err)
				}
				marked, _ := snap.StragglerGPUs()
				if snap.GPUCount() == 16 && marked == 2 {
					a, b := gpuOf(t, snap, "node-00", 3).Straggler, gpuOf(t, snap, "node-01", 2).Straggler
					if !a.At.Equal(now.Add(-4*time.Minute)) || !b.At.Equal(now.Add(-10*time.Second)) || a.Lag != 0.3 || a.Job != "train-b" {
						t.Errorf("marks %+v and %+v, want named 4 min and 10 s ago", a, b)
					}
					if gpuOf(t, snap, "node-01", 5).Straggler.Named() {
						t.Errorf("node-01 gpu 5, last named 40 minutes ago, is marked")
					}
					return
				}
				if time.Now().After(deadline) {
					t.Fatalf("%d GPUs, %d marked; want 16 and 2", snap.GPUCount(), marked)
				}
				time.Sleep(time.Second)
			}
		})
	}
}
