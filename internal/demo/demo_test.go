package demo

import (
	"bytes"
	"context"
	"fmt"
	"github.com/gpuwatch/gpuwatch/test/syncbuf"
	"io"
	"net"
	"net/http"
	neturl "net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/telemetry"
)

// defaultStory is one run of the built-in story, shared by the tests that read
// it: ten simulated minutes of sixteen agents take most of this package's time.
var defaultStory struct {
	once sync.Once
	res  *Result
	out  string
	err  error
}

// runDefaultStory plays the built-in story as fast as possible, once.
func runDefaultStory(t *testing.T) (*Result, string) {
	t.Helper()
	defaultStory.once.Do(func() {
		var out bytes.Buffer
		defaultStory.res, defaultStory.err = Run(context.Background(), Options{Duration: 10 * time.Minute, Speed: -1, Out: &out})
		defaultStory.out = out.String()
	})
	if defaultStory.err != nil {
		t.Fatalf("Run: %v\n%s", defaultStory.err, defaultStory.out)
	}
	return defaultStory.res, defaultStory.out
}

// TestDefaultStory plays the built-in story as fast as possible and checks that
// the agents observed every scripted fault: a health condition of the right kind on
// the right target, or the Xid counted on the right GPU; that conditions whose
// fault ended cleared; and that every agent served its /metrics over HTTP.
func TestDefaultStory(t *testing.T) {
	res, outText := runDefaultStory(t)
	out := bytes.NewBufferString(outText)
	if res.Simulated != 10*time.Minute {
		t.Errorf("simulated %s, want 10m", res.Simulated)
	}
	has := func(node string, kind EventKind, match func(Event) bool) bool {
		for _, e := range res.Events {
			if e.Node == node && e.Kind == kind && match(e) {
				return true
			}
		}
		return false
	}

	// The Xids of the story, counted by the agents' xid source on the right GPU.
	for _, want := range []struct {
		node     string
		gpu, xid int
	}{
		{"node-05", 6, 13},
		{"node-07", 3, 48},
		{"node-07", 3, 63},
		{"node-11", 5, 79},
		{"node-06", 7, 119},
		{"node-16", 0, 94},
	} {
		if !has(want.node, EventXid, func(e Event) bool { return e.GPU == want.gpu && e.Xid == want.xid && e.Count >= 1 }) {
			t.Errorf("Xid %d on %s gpu%d not counted by its agent", want.xid, want.node, want.gpu)
		}
	}

	// Every fault, as the health condition its agent raised.
	raised := []struct {
		node, target string
		kind         telemetry.ConditionKind
		action       telemetry.Action // "" when any
	}{
		{"node-03", "gpu2", telemetry.ConditionECCSBERate, ""},                     // ecc-sbe-storm
		{"node-05", "gpu6", telemetry.ConditionXid, telemetry.ActionRestartApp},    // Xid 13
		{"node-07", "gpu3", telemetry.ConditionECCDBE, ""},                         // Xid 48
		{"node-07", "gpu3", telemetry.ConditionRowRemapPending, ""},                // Xid 63
		{"node-07", "gpu3", telemetry.ConditionXid, telemetry.ActionResetGPU},      // the driver's recovery action overrides 48+63
		{"node-11", "gpu5", telemetry.ConditionGPULost, telemetry.ActionRestartBM}, // Xid 79
		{"node-02", "gpu1", telemetry.ConditionThermalThrottle, ""},                // thermal
		{"node-14", "mlx5_3/port1", telemetry.ConditionIBFlap, ""},                 // ib-flap
		{"node-09", "gpu4/nvlink4", telemetry.ConditionNVLinkErrors, ""},           // nvlink-crc
		{"node-12", "mlx5_6/port1", telemetry.ConditionIBDown, ""},                 // ib-down
		{"node-04", "gpu2", telemetry.ConditionPowerThrottle, ""},                  // power brake
		{"node-06", "gpu7", telemetry.ConditionXid, telemetry.ActionResetGPU},      // Xid 119
		{"node-16", "gpu0", telemetry.ConditionXid, telemetry.ActionDrainAndReset}, // Xid 94 and the driver's action
		{"node-16", "gpu0", telemetry.ConditionRecoveryAction, telemetry.ActionDrainAndReset},
	}
	for _, want := range raised {
		if !has(want.node, EventRaised, func(e Event) bool {
			return e.Target == want.target && e.Condition == want.kind && (want.action == "" || e.Action == want.action)
		}) {
			t.Errorf("no %s condition (action %q) raised on %s %s", want.kind, want.action, want.node, want.target)
		}
	}
	// Faults that ended, as conditions cleared.
	for _, want := range []struct {
		node, target string
		kind         telemetry.ConditionKind
	}{
		{"node-11", "gpu5", telemetry.ConditionGPULost},         // the drain controller's reboot
		{"node-07", "gpu3", telemetry.ConditionECCDBE},          // on-call's GPU reset at 4m
		{"node-07", "gpu3", telemetry.ConditionRowRemapPending}, // the reset activates the remap
		{"node-12", "mlx5_6/port1", telemetry.ConditionIBDown},  // back after 3m
		{"node-02", "gpu1", telemetry.ConditionClockThrottle},   // cooled down after 2m
		// The brake released after 1m30s ends the hardware slowdown; power-throttle
		// itself stays when the placement engine put a training job there, which
		// runs the GPU at its power cap.
		{"node-04", "gpu2", telemetry.ConditionClockThrottle},
	} {
		if !has(want.node, EventCleared, func(e Event) bool { return e.Target == want.target && e.Condition == want.kind }) {
			t.Errorf("%s on %s %s never cleared", want.kind, want.node, want.target)
		}
	}
	// Node states as the agents judge them: the GPU that fell off the bus drained
	// its node, the reboot put it on probation; node-07's GPU was reset and it is
	// back in service (healthy, or still on the agent's probation when its
	// drain waited for a job to end); the GPUs waiting for a reset keep theirs
	// draining.
	if !has("node-11", EventState, func(e Event) bool { return e.To == telemetry.StateDrained }) {
		t.Errorf("node-11 never drained after its GPU was lost")
	}
	final := map[string]telemetry.State{}
	for _, n := range res.Nodes {
		final[n.Name] = n.Report.State
	}
	for node, want := range map[string]telemetry.State{
		"node-11": telemetry.StateProbation, "node-07": telemetry.StateHealthy, "node-16": telemetry.StateDraining,
		"node-06": telemetry.StateDraining, "node-01": telemetry.StateHealthy,
	} {
		if node == "node-07" && final[node] == telemetry.StateProbation {
			continue
		}
		if node == "node-16" && final[node] == telemetry.StateDrained {
			continue // drained on the first report, its GPU idle by the end
		}
		if final[node] != want {
			t.Errorf("%s ends %s, want %s", node, final[node], want)
		}
	}

	// At the end one GPU is lost (node-15's, whose reboot was refused; node-11's
	// came back) and the fleet is working.
	tot := totals(res.Nodes)
	// node-06 gpu7's GSP stopped answering (Xid 119) and nobody reset it.
	if tot.gpus != 128 || tot.lost != 1 || tot.silent != 1 {
		t.Errorf("final fleet: %d GPUs, %d lost, %d silent; want 128, 1, 1", tot.gpus, tot.lost, tot.silent)
	}
	if tot.allocated == 0 || tot.busy == 0 || tot.powerW < 128*60 {
		t.Errorf("final fleet looks dead: %+v", tot)
	}
	// A full cycle every other tick (FullEvery 2), a health cycle on the others.
	if res.FullCycles == 0 || res.HealthCycles < res.FullCycles-16*2 {
		t.Errorf("%d full and %d health cycles", res.FullCycles, res.HealthCycles)
	}
	for _, n := range res.Nodes {
		if n.SourcesUp == 0 || !strings.HasPrefix(n.URL, "http://127.0.0.1:") {
			t.Errorf("%s: %d sources up, URL %q", n.Name, n.SourcesUp, n.URL)
		}
		if !strings.Contains(out.String(), n.URL+"/metrics") {
			t.Errorf("the output does not give %s's /metrics URL", n.Name)
		}
	}
	// The /metrics excerpt is the worst node's, read over HTTP.
	if !strings.Contains(res.Metrics, fmt.Sprintf("gpuwatch_node_health_state{node=%q} ", res.MetricsNode)) ||
		!strings.Contains(res.Metrics, "DCGM_FI_DEV_GPU_TEMP{") {
		t.Errorf("/metrics of %s lacks its draining state or GPU temperatures", res.MetricsNode)
	}

	// The store holds what the agents shipped, as it answers through its Querier:
	// every GPU, every Xid the agents counted, every cycle's health state, and every
	// sample the shippers sent.
	st := res.Store
	if st.Sent == 0 || st.Accepted != st.Sent || st.Rejected != 0 || st.Dropped != 0 {
		t.Errorf("store: accepted %d, refused %d; agents sent %d, dropped %d", st.Accepted, st.Rejected, st.Sent, st.Dropped)
	}
	if st.Series < 16*1500 {
		t.Errorf("store holds %d series, want at least 1,500 per node", st.Series)
	}
	// Every Xid of the story once, and the driver's recovery action changing on
	// each GPU the story hurts (and back on node-07's after its reset): 14. A
	// reboot starts the node's counters again: the final counters hold only the
	// Xids of each node's current boot, without node-11's 79 and 154.
	xids, current := 0, 0
	for _, e := range res.Events {
		if e.Kind != EventXid {
			continue
		}
		xids += e.Count
		current += e.Count
		for _, r := range res.Drain.Reboots {
			if r.Node == e.Node && !e.At.After(r.Down) {
				current -= e.Count
			}
		}
	}
	if xids != 14 || tot.xids != current || current != 12 {
		t.Errorf("the agents counted %d Xids (events), %d on the current boots and %d in the final counters, want 14, 12, 12", xids, current, tot.xids)
	}
	for expr, want := range map[string]float64{
		queryGPUs: 128,
		queryXids: float64(current),
	} {
		if got := st.Answer(expr); got != want {
			t.Errorf("the store answers %s = %g, want %g", expr, got, want)
		}
	}
	// A steady value is shipped once per full interval, a change at once: at
	// least one health-state sample per node and full cycle, at most one per
	// cycle.
	if got := st.Answer(queryHealthSamples(res.Simulated)); got < float64(res.FullCycles-16) || got > float64(res.HealthCycles+res.FullCycles) {
		t.Errorf("the store holds %g health-state samples; the agents ran %d full and %d health cycles", got, res.FullCycles, res.HealthCycles)
	}
	// Allocations reach the store with the job's account: what fair share charges.
	// Series of jobs that ended in the last five minutes still count.
	ranGPUs := 0
	for _, r := range res.ran {
		ranGPUs += len(r.gpus)
	}
	if got := st.Answer(queryAttributed); !(got >= float64(tot.allocated)-8 && got <= float64(ranGPUs)) {
		t.Errorf("the store answers %s = %g with %d GPUs allocated (%d job GPUs over the run)", queryAttributed, got, tot.allocated, ranGPUs)
	}
	for _, s := range []string{"Grafana: add a Prometheus data source with URL " + st.URL, queryGPUs + " = 128 GPUs",
		fmt.Sprintf("%s = %d (the agents counted %d)", queryXids, current, current)} {
		if !strings.Contains(out.String(), s) {
			t.Errorf("output lacks %q", s)
		}
	}
	for _, s := range []string{"fleet: 128 GPUs", "Xids counted by the agents", "GPU-hours allocated", "Faults over the run (gpuwatch faults): 16 nodes, 128 GPUs;",
		"node healthy → draining", "cleared ib-down", res.MetricsNode + "'s /metrics"} {
		if !strings.Contains(out.String(), s) {
			t.Errorf("output lacks %q:\n%s", s, out.String())
		}
	}
	// The server's rules turn the story into alerts as they fire and resolve:
	// the lost GPU pages and resolves after the reboot; node-15's refused reboot
	// is a fallback.
	for _, s := range []string{"node-11              alert GpuwatchGPULost [critical]: GPU 5 on node-11 is lost",
		"node-11              alert GpuwatchGPULost [critical] resolved", "alert GpuwatchDrainFallback [warning]"} {
		if !strings.Contains(out.String(), s) {
			t.Errorf("output lacks %q", s)
		}
	}
	// Besides a line per job the placement engine placed and per alert.
	alerts := strings.Count(out.String(), " alert Gpuwatch")
	if alerts > 80 {
		t.Errorf("%d alert lines: the story should page a few dozen times, not on every cycle", alerts)
	}
	// 250 for the story and its summaries, 40 for the utilization report by
	// account and the fault summary that end it.
	if n := strings.Count(out.String(), "\n") - len(res.Placement.Placed) - alerts; n > 290 {
		t.Errorf("the default output has %d lines besides the placements and alerts, want at most 290", n)
	}
}

// TestShowMetrics prints one node's whole /metrics, served by its agent.
func TestShowMetrics(t *testing.T) {
	var out bytes.Buffer
	res, err := Run(context.Background(), Options{Nodes: 2, Duration: time.Minute, Speed: -1, ShowMetrics: "node-02", Out: &out})
	if err != nil {
		t.Fatalf("Run: %v\n%s", err, out.String())
	}
	if res.MetricsNode != "node-02" || !strings.Contains(out.String(), res.Metrics) ||
		!strings.Contains(res.Metrics, `DCGM_FI_DEV_GPU_TEMP{DCGM_FI_DRIVER_VERSION=`) ||
		!strings.Contains(res.Metrics, `hostname="node-02"`) || !strings.Contains(res.Metrics, `node="node-02"`) {
		t.Errorf("node-02's /metrics not printed whole:\n%s", out.String())
	}
	if _, err := Run(context.Background(), Options{Nodes: 2, Duration: time.Minute, Speed: -1, ShowMetrics: "node-03"}); err == nil ||
		!strings.Contains(err.Error(), "node-03") {
		t.Errorf("--show-metrics on a node the fleet lacks: %v", err)
	}
}

// TestStoreServesGrafana keeps the server up after the summary and asks it, over
// HTTP as Grafana does, for what the agents shipped; and the data lies where
// Grafana looks: in the minutes before now.
func TestStoreServesGrafana(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out := &syncBuffer{}
	done := make(chan error, 1)
	var res *Result
	before := time.Now()
	go func() {
		var err error
		res, err = Run(ctx, Options{Nodes: 2, Duration: 2 * time.Minute, Speed: -1, KeepServing: true,
			ServerListen: "127.0.0.1:0", Out: out})
		done <- err
	}()
	var url string
	for deadline := time.Now().Add(3 * time.Minute); url == ""; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no serving line after 3 minutes:\n%s", out.String())
		}
		if _, rest, ok := strings.Cut(out.String(), "serving the store at "); ok {
			url, _, _ = strings.Cut(rest, " ")
		}
	}
	// Grafana reads with the demo's read-only token, whose file the header names.
	_, rest, _ := strings.Cut(out.String(), "Authorization: Bearer <")
	tokenFile, _, _ := strings.Cut(rest, ">")
	secret, err := os.ReadFile(tokenFile)
	if err != nil {
		t.Fatalf("the demo's Grafana token: %v\n%s", err, out.String())
	}
	query := url + "/api/v1/query?query=" + neturl.QueryEscape("count(DCGM_FI_DEV_GPU_TEMP)")
	if resp, err := http.Get(query); err != nil {
		t.Fatal(err)
	} else if resp.Body.Close(); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("GET without a token: %s, want 401: the demo's server is authenticated", resp.Status)
	}
	req, _ := http.NewRequest(http.MethodGet, query, nil)
	req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(secret)))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	// No time parameter: the store answers at now, which the run's data reaches.
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `"value":[`) || !strings.Contains(string(body), `,"16"]`) {
		t.Errorf("GET %s/api/v1/query: %s %s", url, resp.Status, body)
	}
	// The server's own series are in its store too, as a scrape of it would
	// put them there: the drain controller's budget, from the demo's policy.
	req, _ = http.NewRequest(http.MethodGet, url+"/api/v1/query?query="+neturl.QueryEscape(`gpuwatch_drain_budget_limit{job="gpuwatch-server"}`), nil)
	req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(secret)))
	if resp, err = http.DefaultClient.Do(req); err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(body), `"job":"gpuwatch-server"`) || !strings.Contains(string(body), `,"1"]`) {
		t.Errorf("the server's own gpuwatch_drain_budget_limit is not in its store (2 nodes at 50%%: 1): %s", body)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if start := res.Nodes[0].Snapshot.Time.Add(-res.Simulated); start.After(before) || start.Before(before.Add(-2*time.Minute-time.Second)) {
		t.Errorf("simulated time started %s, want the 2m before %s", start, before)
	}
	if !strings.Contains(out.String(), "Grafana: add a Prometheus data source with URL "+url) {
		t.Errorf("header does not give %s as Grafana's data source URL:\n%s", url, out.String())
	}
}

// TestServerListen: an address that cannot be served is an error naming it; with
// none given, a taken default port falls back to a free one.
func TestServerListen(t *testing.T) {
	_, err := Run(context.Background(), Options{Nodes: 1, Duration: 30 * time.Second, Speed: -1, ServerListen: "127.0.0.1:99999"})
	if err == nil || !strings.Contains(err.Error(), "127.0.0.1:99999") {
		t.Errorf("unservable --server-listen: %v", err)
	}
	if ln, err := net.Listen("tcp", DefaultServerListen); err == nil {
		defer ln.Close()
	} // else: something else holds it, which is the case under test too
	var out bytes.Buffer
	res, err := Run(context.Background(), Options{Nodes: 1, Duration: 30 * time.Second, Speed: -1, Out: &out})
	if err != nil {
		t.Fatal(err)
	}
	if res.Store.URL == "http://"+DefaultServerListen || !strings.Contains(out.String(), DefaultServerListen+" is taken") {
		t.Errorf("store at %s with %s taken:\n%s", res.Store.URL, DefaultServerListen, out.String())
	}
	if res.Store.Answer(queryGPUs) != 8 {
		t.Errorf("%s = %g, want 8", queryGPUs, res.Store.Answer(queryGPUs))
	}
}

// syncBuffer is a buffer safe for a writer and a reader at once.
type syncBuffer = syncbuf.Buffer

func TestBadScenario(t *testing.T) {
	_, err := Run(context.Background(), Options{
		Duration: time.Minute, Speed: -1,
		Faults: []byte("faults:\n  - at: 10s\n    node: node-99\n    kind: xid\n    xid: 79\n    gpu: 0\n"), FaultsName: "bad.yaml",
	})
	if err == nil || !strings.Contains(err.Error(), "bad.yaml") || !strings.Contains(err.Error(), "node-99") {
		t.Fatalf("error %v, want one naming bad.yaml and node-99", err)
	}
}

func TestOptionsValidation(t *testing.T) {
	for _, o := range []Options{
		{Nodes: -1},
		{Duration: -time.Second},
		{Tick: 2 * time.Minute, Interval: time.Minute},
		{FullEvery: -1},
		{ListenBase: 65530},
		{ListenBase: -1},
	} {
		if _, err := Run(context.Background(), o); err == nil {
			t.Errorf("Run(%+v) succeeded, want an error", o)
		}
	}
}
