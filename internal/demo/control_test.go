package demo

import (
	"bytes"
	"context"
	"errors"
	"maps"
	"math"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/scheduler/drain"
	"github.com/gpuwatch/gpuwatch/scheduler/fairshare"
	"github.com/gpuwatch/gpuwatch/telemetry"
	"github.com/gpuwatch/gpuwatch/test/realslurm"
)

// countAudit counts the audit records of a node with the given event, action and
// outcome.
func countAudit(recs []drain.AuditRecord, node, event, action string, outcome drain.Outcome) int {
	n := 0
	for _, r := range recs {
		if r.Node == node && r.Event == event && r.Action == action && r.Outcome == outcome {
			n++
		}
	}
	return n
}

// TestDefaultStoryDrains reads the drain controller's audit log after the default
// story: the faults whose catalog action takes the GPU out of service drain their
// node (the lost GPU reboots it), exactly once each, under the budget; the ones
// that only warn keep the node in service and exclude the GPU from gpuwatch's
// placement; node-07 (its GPU reset by on-call) and node-11 (rebooted by the
// demo for the actuator) come back after probation; and the output tells it.
func TestDefaultStoryDrains(t *testing.T) {
	res, out := runDefaultStory(t)
	d := res.Drain
	if d.Actuator != "log" {
		t.Errorf("actuator %q, want log", d.Actuator)
	}
	recs := d.Audit
	for node, action := range map[string]string{
		"node-07": "drain",  // Xid 48 + 63 → RESET_GPU
		"node-11": "reboot", // Xid 79 → RESTART_BM
		"node-14": "drain",  // InfiniBand flaps → CHECK_MECHANICALS
		"node-12": "drain",  // InfiniBand port down → CHECK_MECHANICALS
		"node-06": "drain",  // Xid 119 → RESET_GPU
		"node-16": "drain",  // Xid 94 with the driver's DRAIN_AND_RESET
	} {
		if n := countAudit(recs, node, "decision", action, drain.OutcomePending); n != 1 {
			t.Errorf("%s: %d %s decisions, want 1", node, n, action)
		}
		if n := countAudit(recs, node, "actuation", action, drain.OutcomeAccepted); n != 1 {
			t.Errorf("%s: %d accepted %s actuations, want 1", node, n, action)
		}
		if !strings.Contains(out, "would "+action+" "+node+` reason="`+drain.ReasonPrefix) {
			t.Errorf("the output lacks the log actuator's %q for %s", "would "+action, node)
		}
	}
	// node-15's reboot is refused: it is drained instead, at once, with the
	// same reason (containment never depends on the remedy).
	if countAudit(recs, "node-15", "decision", "reboot", drain.OutcomePending) != 1 ||
		countAudit(recs, "node-15", "actuation", "reboot", drain.OutcomeRefused) != 1 ||
		countAudit(recs, "node-15", "decision", "cordon", drain.OutcomePending) != 1 ||
		countAudit(recs, "node-15", "actuation", "cordon", drain.OutcomeAccepted) != 1 {
		t.Errorf("node-15: want a reboot decided, refused, and a drain instead, accepted")
	}
	if !strings.Contains(out, "would drain node-15 reason=\""+drain.ReasonPrefix) || !strings.Contains(out, "reboot refused: ") {
		t.Errorf("the output lacks node-15's refused reboot and the drain instead")
	}
	// Warnings keep their node in service: the GPU is excluded, nothing drained.
	for node, gpu := range map[string]string{"node-03": "gpu2", "node-02": "gpu1", "node-09": "gpu4/nvlink4", "node-04": "gpu2"} {
		for _, r := range recs {
			if r.Node == node && nodeLevel(r.Action) {
				t.Errorf("%s: %s %s (%s), want no drain for a warning", node, r.Event, r.Action, r.Outcome)
			}
		}
		excluded := false
		for _, r := range recs {
			if r.Node == node && r.Action == string(drain.ModeExcludeGPU) && len(r.Evidence) > 0 && shortTarget(r.Evidence[0].Target) == gpu {
				excluded = true
			}
		}
		if !excluded {
			t.Errorf("%s %s: no exclude-gpu decision", node, gpu)
		}
	}
	// The faults that recover lead to probation and a resume.
	for _, node := range []string{"node-07", "node-11"} {
		if n := countAudit(recs, node, "actuation", "resume", drain.OutcomeAccepted); n != 1 {
			t.Errorf("%s: %d accepted resumes, want 1", node, n)
		}
		if !strings.Contains(out, "would resume "+node) {
			t.Errorf("the output lacks %q", "would resume "+node)
		}
	}
	if d.Resumes != 2 {
		t.Errorf("%d resumes, want 2 (node-07, node-11)", d.Resumes)
	}
	state := map[string]drain.NodeStatus{}
	for _, n := range d.Nodes {
		state[n.Node] = n
	}
	for node, want := range map[string]telemetry.State{
		"node-07": telemetry.StateHealthy, "node-11": telemetry.StateHealthy, // resumed
		"node-12": telemetry.StateProbation, // its port came back at 9m30s
		"node-14": telemetry.StateDrained, "node-06": telemetry.StateDrained, "node-16": telemetry.StateDrained,
		"node-15": telemetry.StateDrained, "node-01": telemetry.StateHealthy,
	} {
		if got := state[node].State; got != want {
			t.Errorf("the drain controller ends %s %s, want %s", node, got, want)
		}
	}
	// What the (log) actuator holds at the end: the drained nodes and the one on
	// probation, which stays out of service until its probation ends.
	if held := slices.Sorted(maps.Keys(d.Held)); !slices.Equal(held, []string{"node-06", "node-12", "node-14", "node-15", "node-16"}) {
		t.Errorf("the actuator holds %v out of service, want node-06, node-12, node-14, node-15, node-16", held)
	}
	// The reboot: the demo restarted node-11's agent after the actuator accepted.
	if len(d.Reboots) != 1 || d.Reboots[0].Node != "node-11" || d.Reboots[0].Up.Sub(d.Reboots[0].Down) != rebootTime {
		t.Errorf("reboots %+v, want node-11 down for %s", d.Reboots, rebootTime)
	}
	// Seven drains within the hour, within the demo policy's budget (50% of 16).
	if b := d.Budget; b.Used != 7 || b.Limit != 8 || b.Tripped {
		t.Errorf("budget %+v, want 7 of 8 used, not tripped", b)
	}
	// Latency from the scripted fault to the accepted drain, in simulated time:
	// the lost GPU is fatal and acts on the first report; the others wait for the
	// hysteresis (30 s, or 3 reports) and the report after it (a heartbeat or a
	// change), so at most For + heartbeat + the agents' detection.
	if len(d.Drains) != 7 {
		t.Fatalf("%d drains with a latency, want 7: %+v", len(d.Drains), d.Drains)
	}
	for _, l := range d.Drains {
		lat := l.Latency()
		limit := d.Policy.Hysteresis.For + heartbeat + 30*time.Second
		switch l.Node {
		case "node-11", "node-15", "node-07", "node-12", "node-06":
			// A lost GPU, Xid 48, an IB port down and Xid 119 are discrete
			// fatal events: the first report acts, one health cycle.
			limit = 5 * time.Second
		}
		if lat < 0 || lat > limit {
			t.Errorf("%s: %s from fault to drain, want 0..%s", l.Node, lat, limit)
		}
	}
	for _, s := range []string{"drain controller: drain (rule drain-node): ecc-dbe on gpu3 [critical]",
		"drain controller: probation: no drain-rule condition reported", "the simulated node reboots",
		"drained 7 nodes", "resumed 2 (node-07, node-11)", "drain budget: 7 of 8 nodes used", "fault to drain in simulated time (the scripted fault to the actuator accepting): p50"} {
		if !strings.Contains(out, s) {
			t.Errorf("output lacks %q", s)
		}
	}
}

// TestDefaultStoryFairShare reads the server's fair-share standing after the
// default story: every account of the simulated workload is charged, by what
// its GPUs measured, less than it was allocated (an idle or half-busy GPU is
// charged its activity, at least the idle floor); the ledger saw about the
// GPU-hours the agents' own samples add up to; and measured use ranks some
// users differently from allocation.
func TestDefaultStoryFairShare(t *testing.T) {
	res, out := runDefaultStory(t)
	fs := res.FairShare
	if fs.Err != nil || fs.Standing == nil {
		t.Fatalf("standing %v, error %v", fs.Standing, fs.Err)
	}
	st := fs.Standing
	if st.Fallback || len(st.Unattributed) > 0 {
		t.Errorf("fallback %v (%s), unattributed %+v: every job's account and user should be in the tree", st.Fallback, st.FallbackReason, st.Unattributed)
	}
	var total float64
	accounts := map[string]fairshare.StandingRow{}
	for _, r := range st.Associations {
		switch {
		case r.Depth == 0:
			total = r.UsageAllocated
		case r.User == "":
			accounts[r.Account] = r
		}
	}
	for _, a := range []string{"nlp", "vision", "recsys", "speech", "infra"} {
		r, ok := accounts[a]
		switch {
		case !ok:
			t.Errorf("account %s not in the standing", a)
		case r.UsageAllocated <= 0:
			t.Errorf("account %s: nothing allocated", a)
		case !(r.UsageMeasured < r.UsageAllocated):
			t.Errorf("account %s: measured %.0f GPU-s, allocated %.0f: want measured < allocated", a, r.UsageMeasured, r.UsageAllocated)
		}
	}
	// The ledger's allocated GPU-seconds against the demo's own accounting from
	// the agents' full cycles: the feeder reads up to 15 s behind now and starts
	// after its first interval, so a little less, never more.
	want := res.acct.allocGPUs
	if !(total <= want*1.02 && total >= want*0.85) {
		t.Errorf("the ledger holds %.0f allocated GPU-seconds, the agents' samples %.0f", total, want)
	}
	differ := 0
	for _, r := range st.Associations {
		if r.User == "" {
			continue
		}
		a, ok := fs.ByAllocation.Get(fairshare.Assoc{Account: r.Account, User: r.User})
		if !ok {
			t.Errorf("%s/%s missing from the allocation-charged factors", r.Account, r.User)
			continue
		}
		if math.Abs(float64(r.FairTreeFactor)-a.FairTreeFactor) > 1e-9 {
			differ++
		}
	}
	if differ == 0 {
		t.Errorf("measured use ranks every user as allocation does: nothing to show")
	}
	for _, s := range []string{"+03:00  fair share per account", "+06:00  fair share per account",
		"+10:00  fair share per account and user", "BY ALLOCATION"} {
		if !strings.Contains(out, s) {
			t.Errorf("output lacks %q", s)
		}
	}
}

// TestFairShareConfigCoversWorkload: the demo's fair-share tree names every
// account and user the simulated workload gives its jobs (the jobs seen in the
// default story), so no usage goes unattributed.
func TestFairShareConfigCoversWorkload(t *testing.T) {
	cfg, err := fairshare.ParseConfig("fairshare.yaml", DefaultFairShare)
	if err != nil {
		t.Fatal(err)
	}
	res, _ := runDefaultStory(t)
	seen := 0
	for _, r := range res.FairShare.Standing.Associations {
		if r.User != "" && r.UsageAllocated > 0 {
			seen++
		}
	}
	if seen != cfg.Tree.NumUsers() {
		t.Errorf("%d of the tree's %d users ran jobs", seen, cfg.Tree.NumUsers())
	}
}

// TestDrainLatencies: each accepted automatic drain is paired with its decision
// and with the first scripted fault on its node since the node last returned to
// service; re-assertions and manual drains are not new drains.
func TestDrainLatencies(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	faults := map[string][]time.Time{
		"a": {at(100), at(101), at(500)},
		"b": {at(200)},
	}
	rec := func(s int, node, event, action string, o drain.Outcome, note string) drain.AuditRecord {
		return drain.AuditRecord{Time: at(s), Node: node, Event: event, Action: action, Outcome: o, Note: note}
	}
	recs := []drain.AuditRecord{
		rec(100, "a", "decision", "exclude-gpu", drain.OutcomeRecorded, ""),
		rec(130, "a", "decision", "drain", drain.OutcomePending, ""),
		rec(131, "a", "actuation", "drain", drain.OutcomeRetrying, ""),
		rec(136, "a", "actuation", "drain", drain.OutcomeAccepted, ""), // 36 s after the fault at 100
		rec(136, "a", "actuation", "evacuate", drain.OutcomeAccepted, ""),
		rec(200, "b", "decision", "reboot", drain.OutcomePending, ""),
		rec(200, "b", "actuation", "reboot", drain.OutcomeAccepted, ""), // 0 s
		rec(300, "a", "actuation", "resume", drain.OutcomeAccepted, ""),
		rec(400, "a", "decision", "cordon", drain.OutcomePending, "relapse during probation: re-assert the drain"),
		rec(400, "a", "actuation", "cordon", drain.OutcomeAccepted, ""), // a re-assertion, not a drain
		rec(520, "a", "decision", "drain", drain.OutcomePending, ""),
		rec(521, "a", "actuation", "drain", drain.OutcomeAccepted, ""), // 21 s after the fault at 500
		rec(600, "c", "manual", "cordon", drain.OutcomePending, ""),
		rec(600, "c", "actuation", "cordon", drain.OutcomeAccepted, ""), // manual: no decision, no fault
	}
	got := drainLatencies(recs, faults)
	want := []struct {
		node string
		lat  time.Duration
	}{{"a", 36 * time.Second}, {"b", 0}, {"a", 21 * time.Second}}
	if len(got) != len(want) {
		t.Fatalf("got %+v, want %v", got, want)
	}
	for i, w := range want {
		if got[i].Node != w.node || got[i].Latency() != w.lat {
			t.Errorf("drain %d: %s %s, want %s %s", i, got[i].Node, got[i].Latency(), w.node, w.lat)
		}
	}
	ls := []time.Duration{36 * time.Second, 0, 21 * time.Second}
	if p50, pmax := percentile(ls, 50), percentile(ls, 100); p50 != 21*time.Second || pmax != 36*time.Second {
		t.Errorf("p50 %s, max %s; want 21s, 36s", p50, pmax)
	}
	if percentile(nil, 50) != 0 {
		t.Error("percentile of nothing is not 0")
	}
}

// TestBadControlConfig: a drain policy or fair-share configuration that does not
// parse is an error naming the file and the problem.
func TestBadControlConfig(t *testing.T) {
	for _, tc := range []struct {
		name string
		o    Options
		want []string
	}{
		{"policy", Options{DrainPolicy: []byte("probation:\n  duration: soon\n"), DrainPolicyName: "my-policy.yaml"},
			[]string{"my-policy.yaml", "probation.duration", "soon"}},
		{"fairshare", Options{FairShare: []byte("accounts:\n  - {name: a, shares: lots}\n"), FairShareName: "fs.yaml"},
			[]string{"fs.yaml", "lots"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := tc.o
			o.Nodes, o.Duration, o.Speed = 1, 30*time.Second, -1
			_, err := Run(context.Background(), o)
			for _, w := range tc.want {
				if err == nil || !strings.Contains(err.Error(), w) {
					t.Errorf("error %v, want one naming %q", err, w)
				}
			}
		})
	}
}

// TestSlurmDrains drives a real Slurm cluster (test/realslurm) from the demo: a
// double-bit ECC error on node-02 drains gpu02 through scontrol, on-call's GPU
// reset brings it back after probation (the controller reads Slurm's state, with
// gpuwatch's reason, before it resumes), and the GPU that falls off the bus on
// node-03 has Slurm reboot gpu03, which comes back DOWN and is resumed after
// probation. Skipped where Slurm cannot run, unless GPUWATCH_REQUIRE_REALSLURM=1.
func TestSlurmDrains(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Slurm cluster")
	}
	story := []byte(`faults:
  - {at: 20s, node: node-02, gpu: 1, kind: xid, xid: 48}
  - {at: 21s, node: node-02, gpu: 1, kind: xid, xid: 63}
  - {at: 1m30s, node: node-02, gpu: 1, kind: recover}
  - {at: 30s, node: node-03, gpu: 4, kind: xid, xid: 79}
`)
	var out bytes.Buffer
	// The demo policy's budget (50%) is two nodes of four: name it.
	policy := bytes.Replace(DefaultDrainPolicy, []byte(`max: "50%"`), []byte(`max: 2`), 1)
	if bytes.Equal(policy, DefaultDrainPolicy) {
		t.Fatal("the demo policy's budget line changed: update this test")
	}
	res, err := Run(context.Background(), Options{Nodes: 4, Duration: 5 * time.Minute, Speed: -1, Slurm: true,
		Faults: story, FaultsName: "slurm-story.yaml", DrainPolicy: policy, DrainPolicyName: "slurm-policy.yaml",
		ServerListen: "127.0.0.1:0", Out: &out})
	if errors.Is(err, realslurm.ErrUnavailable) {
		if os.Getenv(realslurm.RequireEnv) == "1" {
			t.Fatalf("%v and %s=1", err, realslurm.RequireEnv)
		}
		t.Skip(err.Error())
	}
	if err != nil {
		t.Fatalf("Run: %v\n%s", err, out.String())
	}
	d := res.Drain
	if d.Actuator != "slurm" {
		t.Errorf("actuator %q, want slurm", d.Actuator)
	}
	for _, c := range []struct {
		node, action string
	}{{"node-02", "drain"}, {"node-02", "resume"}, {"node-03", "reboot"}, {"node-03", "resume"}} {
		if n := countAudit(d.Audit, c.node, "actuation", c.action, drain.OutcomeAccepted); n != 1 {
			t.Errorf("%s: %d accepted %s actuations, want 1", c.node, n, c.action)
		}
	}
	for _, r := range d.Audit {
		if r.Event == "actuation" && r.Outcome != drain.OutcomeAccepted {
			t.Errorf("%s %s: %s %s", r.Node, r.Action, r.Outcome, r.Error)
		}
	}
	for _, s := range []string{`slurm: scontrol update NodeName=gpu02 State=DRAIN Reason="gpuwatch: `,
		"slurm: scontrol update NodeName=gpu02 State=RESUME", `slurm: scontrol reboot ASAP nextstate=DOWN Reason="gpuwatch: gpu-lost`,
		"slurm: scontrol update NodeName=gpu03 State=RESUME"} {
		if !strings.Contains(out.String(), s) {
			t.Errorf("output lacks %q:\n%s", s, out.String())
		}
	}
	if !slices.ContainsFunc(d.Nodes, func(n drain.NodeStatus) bool { return n.Node == "node-03" && n.State == telemetry.StateHealthy }) {
		t.Errorf("node-03 not healthy at the end: %+v", d.Nodes)
	}
	// Slurm itself has both back in service.
	if len(d.Held) != 0 {
		t.Errorf("Slurm holds %v at the end, want nothing", d.Held)
	}
}
