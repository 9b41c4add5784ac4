package test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/internal/server"
	"github.com/gpuwatch/gpuwatch/scheduler/adapters/slurm"
	"github.com/gpuwatch/gpuwatch/scheduler/fairshare"
	"github.com/gpuwatch/gpuwatch/telemetry"
)

// TestFairShareSiteFactorOnRealSlurm: two accounts with equal shares fill the
// real Slurm cluster; the "idle" account's jobs leave their GPUs at 5% and
// the "busy" account's keep them at 95%, as the agents report to the store.
// After an interval, gpuwatch's measured-use fair share sets each pending
// job's SiteFactor: sprio shows it, and Slurm's own priority puts the idle
// account's pending job ahead of the busy one's, although the busy one was
// submitted first. Charged by allocation, the two would tie.
func TestFairShareSiteFactorOnRealSlurm(t *testing.T) {
	c := slurmCluster.Get(t)
	c.Reset(t)
	running := map[string]string{} // node → account
	for i, acct := range []string{"busy", "idle", "busy", "idle"} {
		node := slurmName(i)
		id := c.Submit(t, "sleep 600", "-w", node, "--gres=gpu:h100:8", "--account="+acct)
		c.WaitJobState(t, id, "RUNNING", 30*time.Second)
		running[node] = acct + "/" + id
	}
	pBusy := c.Submit(t, "sleep 60", "--gres=gpu:h100:8", "--account=busy")
	pIdle := c.Submit(t, "sleep 60", "--gres=gpu:h100:8", "--account=idle")
	c.WaitFor(t, 10*time.Second, "both pending", func() bool {
		return c.JobState(t, pBusy) == "PENDING" && c.JobState(t, pIdle) == "PENDING"
	})

	cfg, err := fairshare.ParseConfig("fairshare.yaml", []byte(`
charge: measured
idle_floor: 0.1
accounts:
  - {name: busy, shares: 1, users: [{name: root}]}
  - {name: idle, shares: 1, users: [{name: root}]}
`))
	if err != nil {
		t.Fatal(err)
	}
	srv, err := server.New(server.Options{DataDir: t.TempDir(), FairShare: cfg, FairShareInterval: time.Second,
		SiteFactor: &slurm.SiteFactorWriter{Scontrol: slurm.Scontrol{Env: c.Env(), Timeout: 10 * time.Second}}, Version: "e2e"})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close(context.Background())
	hs := httptest.NewServer(srv.Handler())
	defer hs.Close()

	// What the agents on gpu01–gpu04 shipped over the last minute: each GPU's
	// attribution to its Slurm job and its utilization.
	var batch []telemetry.Sample
	now := time.Now()
	for ts := now.Add(-60 * time.Second); ts.Before(now.Add(-5 * time.Second)); ts = ts.Add(10 * time.Second) {
		for node, aj := range running {
			acct, job, _ := strings.Cut(aj, "/")
			util := 95.0
			if acct == "idle" {
				util = 5
			}
			for g := range 8 {
				uuid := fmt.Sprintf("GPU-%s-%d", node, g)
				batch = append(batch,
					telemetry.Sample{Name: telemetry.MetricGPUAllocationInfo, Labels: telemetry.NewLabels(telemetry.LabelNode, node,
						telemetry.LabelGPUIndex, strconv.Itoa(g), telemetry.LabelGPUUUID, uuid, telemetry.LabelJobID, job,
						telemetry.LabelAccount, acct, telemetry.LabelUser, "root"), Value: 1, Time: ts},
					telemetry.Sample{Name: "DCGM_FI_DEV_GPU_UTIL", Labels: telemetry.NewLabels(telemetry.DCGMLabelUUID, uuid,
						telemetry.DCGMLabelGPU, strconv.Itoa(g), telemetry.DCGMLabelHostname, node, telemetry.LabelNode, node), Value: util, Time: ts})
			}
		}
	}
	if err := srv.Appender().Append(context.Background(), batch); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { srv.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()

	sc := slurm.Scontrol{Env: c.Env()}
	var site map[uint32]int64
	c.WaitFor(t, 30*time.Second, "site factors on both pending jobs", func() bool {
		site, err = sc.SiteFactors(context.Background())
		return err == nil && site[jobID(t, pBusy)] != 0 && site[jobID(t, pIdle)] != 0
	})
	st, _ := srv.FairShare()
	var b strings.Builder
	st.WriteTable(&b)
	t.Logf("standing:\n%s\nsprio site factors: busy job %s → %d, idle job %s → %d", b.String(), pBusy, site[jobID(t, pBusy)], pIdle, site[jobID(t, pIdle)])
	if !(site[jobID(t, pIdle)] > site[jobID(t, pBusy)]) {
		t.Errorf("idle account's pending job has SiteFactor %d, not above the busy account's %d", site[jobID(t, pIdle)], site[jobID(t, pBusy)])
	}
	pending, err := sc.PendingJobs(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	prio := map[string]int64{}
	for _, j := range pending {
		prio[strconv.FormatUint(uint64(j.ID), 10)] = j.Priority
	}
	if !(prio[pIdle] > prio[pBusy]) {
		t.Errorf("Slurm priorities: idle account's job %d, busy account's %d; want the idle one ahead", prio[pIdle], prio[pBusy])
	}
	sprio := c.Run(t, "sprio", "-o", "%.8i %.10u %.10Y %.10S")
	t.Logf("sprio:\n%s", sprio)
}

func jobID(t *testing.T, s string) uint32 {
	t.Helper()
	v, err := strconv.ParseUint(s, 10, 32)
	if err != nil {
		t.Fatal(err)
	}
	return uint32(v)
}
