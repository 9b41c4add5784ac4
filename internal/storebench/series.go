package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/klauspost/compress/snappy"
	"github.com/prometheus/prometheus/prompb"

	"github.com/gpuwatch/gpuwatch/collector/agent"
	"github.com/gpuwatch/gpuwatch/collector/simhw"
)

// runSeries prints one agent's series count on /metrics and in its shipped
// payload, and what its shipper sends over a simulated minute at the default
// schedule (full cycle every 10 s, health-critical fields every 1 s).
func runSeries(args []string) error {
	fs := flag.NewFlagSet("storebench series", flag.ContinueOnError)
	seconds := fs.Int("seconds", 60, "simulated seconds of shipping to count")
	if err := fs.Parse(args); err != nil {
		return err
	}
	t, err := simulateTemplate(3, 1)
	if err != nil {
		return err
	}
	fmt.Printf("one gpuwatch agent on a simulated HGX H100 node (8 GPUs, 8 InfiniBand ports, 18 NVLinks per GPU), dcgm-exporter labels, DCGM off:\n")
	fmt.Printf("  GET /metrics: %d series, of which %d go_*/process_* (scrape-only) and %d the agent's\n", t.metricsLines, t.scrapeOnly, t.metricsLines-t.scrapeOnly)
	fmt.Printf("  shipped per full cycle (exporter families + node label): %d series\n", len(t.series))
	names := t.metricNames()
	type nc struct {
		name string
		n    int
	}
	var list []nc
	for k, v := range names {
		list = append(list, nc{k, v})
	}
	sort.Slice(list, func(i, j int) bool {
		if list[i].n != list[j].n {
			return list[i].n > list[j].n
		}
		return list[i].name < list[j].name
	})
	groups := map[string]int{}
	for _, x := range list {
		groups[family(x.name)] += x.n
	}
	fmt.Printf("  %d metric names; series by group:", len(list))
	for _, g := range []string{"DCGM_FI_*", "gpuwatch_nvlink_*", "gpuwatch_infiniband_*", "node_infiniband_*", "gpuwatch_topology_*", "other gpuwatch_*"} {
		fmt.Printf(" %s %d,", g, groups[g])
	}
	fmt.Println()

	samples, series, perSecond, err := measureShipping(*seconds)
	if err != nil {
		return fmt.Errorf("measuring the shipper: %w", err)
	}
	fmt.Printf("shipper over %d simulated seconds (agent defaults: full cycle 10 s, health cycle 1 s): %d samples of %d series = %.0f samples/s per node\n",
		*seconds, samples, series, float64(samples)/float64(*seconds))
	fmt.Printf("  %d series are shipped every second (health-critical fields), the rest once per 10 s full cycle\n", perSecond)
	fmt.Printf("  per 1,000 nodes: %.0f samples/s (full cycles only: %.0f)\n", 1000*float64(samples)/float64(*seconds), 1000*float64(len(t.series))/10)
	return nil
}

func family(name string) string {
	for _, p := range []string{"DCGM_FI_", "gpuwatch_nvlink_", "gpuwatch_infiniband_", "node_infiniband_", "gpuwatch_topology_"} {
		if len(name) >= len(p) && name[:len(p)] == p {
			return p + "*"
		}
	}
	return "other gpuwatch_*"
}

// measureShipping runs an agent with remote write on a simulated node for
// seconds simulated seconds (a health cycle every second, a full one every
// tenth) and counts what a receiver gets.
func measureShipping(seconds int) (samples, series, everySecond int, err error) {
	var mu sync.Mutex
	perSeries := map[string]int{}
	total := 0
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		raw, err := snappy.Decode(nil, body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		var wr prompb.WriteRequest
		if err := wr.Unmarshal(raw); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		mu.Lock()
		for _, ts := range wr.Timeseries {
			perSeries[labelKey(ts.Labels)] += len(ts.Samples)
			total += len(ts.Samples)
		}
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	defer recv.Close()

	base := ""
	if st, err := os.Stat("/dev/shm"); err == nil && st.IsDir() {
		base = "/dev/shm"
	}
	root, err := os.MkdirTemp(base, "gpuwatch-storebench-")
	if err != nil {
		return 0, 0, 0, err
	}
	defer os.RemoveAll(root)
	f, err := simhw.NewFleet(simhw.FleetSpec{Nodes: 1, Shape: simhw.ShapeHGXH100, Seed: 2, Root: root})
	if err != nil {
		return 0, 0, 0, err
	}
	gen := simhw.NewWorkloadGenerator(f, simhw.WorkloadOptions{Seed: 2})
	advance := func(d time.Duration) error {
		if err := f.Advance(d); err != nil {
			return err
		}
		return gen.Step()
	}
	if err := advance(0); err != nil {
		return 0, 0, 0, err
	}
	n := f.Nodes()[0]
	boot := n.Boot()
	a, err := agent.New(agent.Options{
		Node: n.Name(), NVML: n.NVML(), SysfsRoot: n.SysRoot(), ProcRoot: n.ProcRoot(), KmsgPath: n.KmsgPath(),
		KmsgFromStart: true, BootTime: func() (time.Time, error) { return boot, nil }, BootID: "sim-boot",
		DCGMDisable: true, KubeletSocket: "-", Now: f.Now, KmsgPoll: 5 * time.Millisecond, RemoteWriteURL: recv.URL + "/api/v1/write",
	})
	if err != nil {
		return 0, 0, 0, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	wait := a.Start(ctx)
	defer func() {
		cancel()
		wait()
		a.Close()
	}()
	a.Collect(ctx, true) // the first full cycle, before counting
	if !settle(&mu, &total, 10*time.Second) {
		return 0, 0, 0, fmt.Errorf("nothing received from the agent's shipper")
	}
	mu.Lock()
	clear(perSeries)
	total = 0
	mu.Unlock()
	for s := 1; s <= seconds; s++ {
		if err := advance(time.Second); err != nil {
			return 0, 0, 0, err
		}
		a.Collect(ctx, s%10 == 0)
	}
	settle(&mu, &total, 10*time.Second)
	mu.Lock()
	defer mu.Unlock()
	fast := map[string]int{}
	for key, k := range perSeries {
		if k >= seconds*9/10 {
			everySecond++
			for _, l := range strings.Split(key, "\xfe") {
				if name, ok := strings.CutPrefix(l, "__name__\xff"); ok {
					fast[name]++
				}
			}
		}
	}
	names := make([]string, 0, len(fast))
	for n := range fast {
		names = append(names, n)
	}
	sort.Strings(names)
	fmt.Printf("  shipped every second, series per metric:")
	for _, n := range names {
		fmt.Printf(" %s %d,", n, fast[n])
	}
	fmt.Println()
	return total, len(perSeries), everySecond, nil
}

// settle waits until *n has been non-zero and unchanged for a second, or
// timeout; it reports whether it settled.
func settle(mu *sync.Mutex, n *int, timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	last, since := -1, time.Now()
	for time.Now().Before(deadline) {
		mu.Lock()
		cur := *n
		mu.Unlock()
		if cur != last {
			last, since = cur, time.Now()
		} else if cur > 0 && time.Since(since) > time.Second {
			return true
		}
		time.Sleep(100 * time.Millisecond)
	}
	return false
}
