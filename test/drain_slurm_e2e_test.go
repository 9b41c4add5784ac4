package test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/collector/agent"
	"github.com/gpuwatch/gpuwatch/collector/simhw"
	"github.com/gpuwatch/gpuwatch/internal/server"
	"github.com/gpuwatch/gpuwatch/scheduler/adapters/slurm"
	"github.com/gpuwatch/gpuwatch/scheduler/drain"
	"github.com/gpuwatch/gpuwatch/telemetry"
	"github.com/gpuwatch/gpuwatch/test/realslurm"
)

// liveFleet is a simulated fleet whose clock follows the wall clock, with a
// real gpuwatch agent per node (named gpu01…, as the Slurm nodes) pushing its
// health report to a server after every health cycle (every 250 ms here).
type liveFleet struct {
	t        *testing.T
	fleet    *simhw.Fleet
	server   string
	ctx      context.Context
	interval time.Duration

	mu     sync.Mutex
	agents []*agent.Agent
	stops  []func()
	boots  []int
}

func newLiveFleet(t *testing.T, nodes int, serverURL string) *liveFleet {
	return newLiveFleetEvery(t, nodes, serverURL, 250*time.Millisecond)
}

// newLiveFleetEvery runs the agents' health cycles every interval.
func newLiveFleetEvery(t *testing.T, nodes int, serverURL string, interval time.Duration) *liveFleet {
	t.Helper()
	f, err := simhw.NewFleet(simhw.FleetSpec{Nodes: nodes, Seed: 11, Root: t.TempDir(), Start: time.Now().Truncate(time.Second)})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Advance(0); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	lf := &liveFleet{t: t, fleet: f, server: serverURL, ctx: ctx, interval: interval,
		agents: make([]*agent.Agent, nodes), stops: make([]func(), nodes), boots: make([]int, nodes)}
	for i := range nodes {
		lf.startAgent(i, true)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		last := time.Now()
		for ctx.Err() == nil {
			now := time.Now()
			if err := f.Advance(now.Sub(last)); err != nil {
				t.Error(err)
				return
			}
			last = now
			lf.mu.Lock()
			agents := append([]*agent.Agent(nil), lf.agents...)
			lf.mu.Unlock()
			for _, a := range agents {
				a.Collect(ctx, false)
			}
			time.Sleep(interval - time.Since(now)%interval)
		}
	}()
	t.Cleanup(func() {
		cancel()
		<-done
		lf.mu.Lock()
		defer lf.mu.Unlock()
		for _, stop := range lf.stops {
			stop()
		}
	})
	return lf
}

func slurmName(i int) string { return fmt.Sprintf("gpu%02d", i+1) }

// startAgent starts node i's agent; fresh is false for the agent after a
// reboot: a new boot id and the kernel log read from its end.
func (lf *liveFleet) startAgent(i int, fresh bool) {
	lf.t.Helper()
	n := lf.fleet.Nodes()[i]
	boot := n.Boot()
	lf.boots[i]++
	a, err := agent.New(agent.Options{
		Node: slurmName(i), NVML: n.NVML(), SysfsRoot: n.SysRoot(), ProcRoot: n.ProcRoot(), KmsgPath: n.KmsgPath(),
		KmsgFromStart: fresh, KmsgPoll: 5 * time.Millisecond, BootTime: func() (time.Time, error) { return boot, nil },
		BootID: fmt.Sprintf("boot-%d", lf.boots[i]), DCGM: n.DCGM(), KubeletSocket: "-", Now: lf.fleet.Now,
		Interval: 10 * time.Second, HealthInterval: lf.interval, ServerURL: lf.server,
	})
	if err != nil {
		lf.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(lf.ctx)
	wait := a.Start(ctx)
	lf.agents[i] = a
	lf.stops[i] = func() { cancel(); wait(); a.Close() }
}

// reboot replaces node i's agent, as a node reboot does, after the simulated
// GPUs were reset.
func (lf *liveFleet) reboot(i int) {
	lf.t.Helper()
	if err := lf.fleet.Nodes()[i].Inject(simhw.Fault{Kind: simhw.FaultRecover, GPU: simhw.AllGPUs}); err != nil {
		lf.t.Fatal(err)
	}
	// Write out the kernel log of the old boot (the simulated node materializes
	// it on Advance): the new agent reads from its end, as after a real reboot,
	// and must not see the old boot's Xids as new.
	if err := lf.fleet.Advance(0); err != nil {
		lf.t.Fatal(err)
	}
	lf.mu.Lock()
	defer lf.mu.Unlock()
	lf.stops[i]()
	lf.startAgent(i, false)
}

func (lf *liveFleet) inject(i int, f simhw.Fault) time.Time {
	lf.t.Helper()
	at := time.Now()
	if err := lf.fleet.Nodes()[i].Inject(f); err != nil {
		lf.t.Fatal(err)
	}
	return at
}

// drainServer is an in-process gpuwatch server with the drain controller on
// the real Slurm cluster, behind a stable URL so that it can be restarted on
// the same state directory.
type drainServer struct {
	t       *testing.T
	hs      *httptest.Server
	handler atomic.Pointer[http.Handler]
	dataDir string
	opts    server.DrainOptions

	srv  *server.Server
	stop func()
}

func testPolicy(budgetShare float64) *drain.Policy {
	p := drain.DefaultPolicy()
	p.Hysteresis.ClearObservations, p.Hysteresis.ClearAfter = 2, time.Second
	p.Probation.Duration, p.Probation.MaxReportGap = 3*time.Second, 5*time.Second
	p.Budget.Share, p.Budget.Count, p.Budget.Min, p.Budget.Window = budgetShare, -1, 0, time.Hour
	p.Retry.Initial, p.Retry.Max = 200*time.Millisecond, time.Second
	return p
}

func newDrainServer(t *testing.T, c *realslurm.Cluster, pol *drain.Policy) *drainServer {
	t.Helper()
	ds := &drainServer{t: t, dataDir: t.TempDir(), opts: server.DrainOptions{Policy: pol,
		Actuator:     slurm.Actuator{Scontrol: slurm.Scontrol{Env: c.Env(), Timeout: 3 * time.Second}},
		PollInterval: 100 * time.Millisecond, VerifyInterval: 2 * time.Second, CallTimeout: 5 * time.Second}}
	ds.hs = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := ds.handler.Load()
		if h == nil {
			http.Error(w, "restarting", http.StatusServiceUnavailable)
			return
		}
		(*h).ServeHTTP(w, r)
	}))
	ds.start()
	t.Cleanup(func() { ds.close(); ds.hs.Close() })
	return ds
}

func (ds *drainServer) start() {
	ds.t.Helper()
	opts := ds.opts
	srv, err := server.New(server.Options{DataDir: ds.dataDir, Drain: &opts, Version: "e2e"})
	if err != nil {
		ds.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { srv.Run(ctx); close(done) }()
	h := srv.Handler()
	ds.handler.Store(&h)
	ds.srv = srv
	ds.stop = func() { cancel(); <-done; srv.Close(context.Background()) }
}

// close stops the server as a crash would leave it: the handler gone at once.
func (ds *drainServer) close() {
	ds.handler.Store(nil)
	if ds.stop != nil {
		ds.stop()
		ds.stop = nil
	}
}

func (ds *drainServer) restart() {
	ds.close()
	ds.start()
}

func (ds *drainServer) audit() []drain.AuditRecord {
	ds.t.Helper()
	recs, err := ds.srv.Drain().Audit(time.Time{}, 100000)
	if err != nil {
		ds.t.Fatal(err)
	}
	return recs
}

func countAudit(recs []drain.AuditRecord, node, event, action string, outcome drain.Outcome) int {
	n := 0
	for _, r := range recs {
		if r.Node == node && r.Event == event && r.Action == action && r.Outcome == outcome {
			n++
		}
	}
	return n
}

func reason(t *testing.T, c *realslurm.Cluster, node string) string {
	t.Helper()
	return strings.TrimSpace(c.Run(t, "sinfo", "-h", "-N", "-n", node, "-o", "%E"))
}

var slurmCluster = &realslurm.Shared{Options: realslurm.Options{RebootDelay: time.Second}}

// TestDrainXid79OnRealSlurm: Xid 79 on gpu02 GPU 3 → Slurm shows gpu02
// draining for a reboot with gpuwatch's reason while its job keeps running;
// when the job ends the node reboots and comes back DOWN, still held; the
// rebooted node's agent reports healthy, probation passes, and gpuwatch
// resumes gpu02.
func TestDrainXid79OnRealSlurm(t *testing.T) {
	c := slurmCluster.Get(t)
	c.Reset(t)
	ds := newDrainServer(t, c, testPolicy(0.5))
	lf := newLiveFleet(t, 4, ds.hs.URL)
	c.WaitFor(t, 20*time.Second, "every agent reporting", func() bool { return len(ds.srv.Drain().Nodes()) == 4 })

	job := c.Submit(t, "sleep 300", "-w", "gpu02", "--gres=gpu:h100:8")
	c.WaitJobState(t, job, "RUNNING", 30*time.Second)

	at := lf.inject(1, simhw.Fault{GPU: 3, Kind: simhw.FaultXid, Xid: 79})
	c.WaitFor(t, 20*time.Second, "gpu02 drained by gpuwatch", func() bool { return strings.HasPrefix(reason(t, c, "gpu02"), "gpuwatch: ") })
	t.Logf("Xid 79 injected → Slurm shows %q (%s) after %s", reason(t, c, "gpu02"), c.NodeState(t, "gpu02"), time.Since(at).Round(time.Millisecond))
	if r := reason(t, c, "gpu02"); !strings.Contains(r, "gpu=GPU-") || !strings.Contains(r, "action=RESTART_BM") {
		t.Errorf("gpu02's reason %q does not name the GPU and the action", r)
	}
	time.Sleep(2 * time.Second)
	if st := c.JobState(t, job); st != "RUNNING" {
		t.Fatalf("the job on gpu02 is %s after the drain; running jobs must finish", st)
	}
	for _, n := range []string{"gpu01", "gpu03", "gpu04"} {
		if st := c.NodeState(t, n); st != "idle" {
			t.Errorf("%s is %s; only gpu02 had a fault", n, st)
		}
	}

	// The job ends; Slurm reboots the node (the test cluster's RebootProgram
	// restarts its slurmd); the simulated GPUs are reset and the agent starts
	// on the new boot.
	c.Run(t, "scancel", job)
	c.WaitFor(t, 30*time.Second, "gpu02 rebooted and held down", func() bool {
		if st := c.NodeState(t, "gpu02"); st != "down" {
			t.Logf("gpu02 %s %q", st, reason(t, c, "gpu02"))
			time.Sleep(300 * time.Millisecond)
			return false
		}
		return true
	})
	t.Logf("audit:\n%s", dump(ds.audit(), "gpu02"))
	if r := reason(t, c, "gpu02"); !strings.HasPrefix(r, "gpuwatch: ") {
		t.Errorf("after the reboot gpu02's reason is %q; gpuwatch's should hold it", r)
	}
	lf.reboot(1)
	c.WaitFor(t, 30*time.Second, "gpu02 resumed by gpuwatch after probation", func() bool {
		if st := c.NodeState(t, "gpu02"); st != "idle" {
			n, _ := ds.srv.Drain().Node("gpu02")
			lf.mu.Lock()
			rep := lf.agents[1].Health.Report()
			lf.mu.Unlock()
			t.Logf("gpu02 %s; controller: %s %s owned=%v held=%q stuck=%q probation=%s %q; agent: %s %v", st, n.State, n.Since.Format("15:04:05"), n.Owned, n.Held, n.Stuck, n.ProbationEnds.Format("15:04:05"), n.ProbationNote, rep.State, rep.Summary())
			time.Sleep(time.Second)
			return false
		}
		return true
	})
	recs := ds.audit()
	if countAudit(recs, "gpu02", "actuation", "reboot", drain.OutcomeAccepted) != 1 || countAudit(recs, "gpu02", "actuation", "resume", drain.OutcomeAccepted) != 1 {
		t.Errorf("audit for gpu02 lacks exactly one accepted reboot and one accepted resume:\n%s", dump(recs, "gpu02"))
	}
}

// TestAdminDrainNeverResumedOnRealSlurm: a node an administrator drained with
// their own reason stays drained through a fault and its recovery.
func TestAdminDrainNeverResumedOnRealSlurm(t *testing.T) {
	c := slurmCluster.Get(t)
	c.Reset(t)
	c.Run(t, "scontrol", "update", "nodename=gpu04", "state=drain", "reason=replacing a fan (ops ticket 4711)")
	ds := newDrainServer(t, c, testPolicy(0.5))
	lf := newLiveFleet(t, 4, ds.hs.URL)
	c.WaitFor(t, 20*time.Second, "every agent reporting", func() bool { return len(ds.srv.Drain().Nodes()) == 4 })
	lf.inject(3, simhw.Fault{GPU: 1, Kind: simhw.FaultXid, Xid: 79})
	c.WaitFor(t, 20*time.Second, "the controller seeing gpu04 held by the admin", func() bool {
		n, ok := ds.srv.Drain().Node("gpu04")
		return ok && n.Held != ""
	})
	lf.reboot(3)
	time.Sleep(6 * time.Second) // longer than probation
	if r := reason(t, c, "gpu04"); r != "replacing a fan (ops ticket 4711)" {
		t.Errorf("gpu04's reason is %q, want the admin's", r)
	}
	if st := c.NodeState(t, "gpu04"); st != "drained" {
		t.Errorf("gpu04 is %s, want still drained", st)
	}
	for _, r := range ds.audit() {
		if r.Node == "gpu04" && r.Event == "actuation" && r.Outcome == drain.OutcomeAccepted {
			t.Errorf("gpuwatch acted on the admin's node: %+v", r)
		}
	}
}

// TestDrainBudgetOnRealSlurm: faults on three of four nodes with a 50% budget
// → exactly two drained, the breaker trips, and the audit log says why the
// third was not.
func TestDrainBudgetOnRealSlurm(t *testing.T) {
	c := slurmCluster.Get(t)
	c.Reset(t)
	ds := newDrainServer(t, c, testPolicy(0.5))
	lf := newLiveFleet(t, 4, ds.hs.URL)
	c.WaitFor(t, 20*time.Second, "every agent reporting", func() bool { return len(ds.srv.Drain().Nodes()) == 4 })
	for _, i := range []int{0, 1, 2} {
		lf.inject(i, simhw.Fault{GPU: 0, Kind: simhw.FaultXid, Xid: 79})
	}
	owned := func() int {
		n := 0
		for _, node := range []string{"gpu01", "gpu02", "gpu03", "gpu04"} {
			if strings.HasPrefix(reason(t, c, node), "gpuwatch: ") {
				n++
			}
		}
		return n
	}
	c.WaitFor(t, 20*time.Second, "two nodes drained", func() bool { return owned() == 2 })
	c.WaitFor(t, 10*time.Second, "the breaker tripped", func() bool { return ds.srv.Drain().Budget().Tripped })
	time.Sleep(2 * time.Second)
	if n := owned(); n != 2 {
		t.Errorf("%d nodes carry gpuwatch's reason, want exactly 2", n)
	}
	skipped := 0
	for _, r := range ds.audit() {
		if r.Outcome == drain.OutcomeSkippedBudget {
			skipped++
			if r.Budget.Used != 2 || r.Budget.Limit != 2 {
				t.Errorf("skipped-budget record with budget %+v, want 2 of 2 used", r.Budget)
			}
		}
	}
	if skipped == 0 {
		t.Errorf("no skipped-budget decision in the audit log:\n%s", dump(ds.audit(), ""))
	}
}

// TestDrainThroughControllerOutageAndServerRestart: slurmctld is down when the
// fault comes; the drain is retried until slurmctld answers, and the gpuwatch
// server restarted in the middle loses nothing: the drain is issued once.
func TestDrainThroughControllerOutageAndServerRestart(t *testing.T) {
	c := slurmCluster.Get(t)
	c.Reset(t)
	ds := newDrainServer(t, c, testPolicy(0.5))
	lf := newLiveFleet(t, 4, ds.hs.URL)
	c.WaitFor(t, 20*time.Second, "every agent reporting", func() bool { return len(ds.srv.Drain().Nodes()) == 4 })
	c.StopController(t)
	lf.inject(0, simhw.Fault{GPU: 5, Kind: simhw.FaultXid, Xid: 79})
	c.WaitFor(t, 30*time.Second, "a failed attempt", func() bool {
		for _, r := range ds.audit() {
			if r.Node == "gpu01" && r.Event == "actuation" && r.Outcome == drain.OutcomeRetrying {
				return true
			}
		}
		return false
	})
	ds.restart()
	time.Sleep(time.Second)
	c.StartController(t)
	c.WaitFor(t, 30*time.Second, "gpu01 drained after slurmctld is back", func() bool { return strings.HasPrefix(reason(t, c, "gpu01"), "gpuwatch: ") })
	time.Sleep(3 * time.Second)
	recs := ds.audit()
	if n := countAudit(recs, "gpu01", "actuation", "reboot", drain.OutcomeAccepted); n != 1 {
		t.Errorf("%d accepted reboots of gpu01, want exactly 1:\n%s", n, dump(recs, "gpu01"))
	}
}

func dump(recs []drain.AuditRecord, node string) string {
	var b strings.Builder
	for _, r := range recs {
		if node == "" || r.Node == node {
			fmt.Fprintf(&b, "  %s %s %s %s %s %q %s\n", r.Time.Format("15:04:05.000"), r.Node, r.Event, r.Action, r.Outcome, r.Reason, r.Error)
		}
	}
	return b.String()
}

func TestMain(m *testing.M) {
	code := m.Run()
	slurmCluster.Close()
	os.Exit(code)
}

// slurmNoReboot is a cluster without a RebootProgram, as many real ones are:
// slurmctld refuses `scontrol reboot`.
var slurmNoReboot = &realslurm.Shared{Options: realslurm.Options{NoRebootProgram: true}}

// TestRebootRefusedDrainsOnRealSlurm: the 3 a.m. case on a real
// slurmctld without a RebootProgram. An Xid 79 calls for a reboot; Slurm
// refuses it; gpuwatch drains the node instead with its owned reason (so no
// new job lands on a GPU that fell off the bus), audits "reboot refused: …;
// drained instead" and counts the fallback.
func TestRebootRefusedDrainsOnRealSlurm(t *testing.T) {
	c := slurmNoReboot.Get(t)
	c.Reset(t)
	ds := newDrainServer(t, c, testPolicy(0.5))
	lf := newLiveFleet(t, 4, ds.hs.URL)
	c.WaitFor(t, 20*time.Second, "every agent reporting", func() bool { return len(ds.srv.Drain().Nodes()) == 4 })

	at := lf.inject(2, simhw.Fault{GPU: 5, Kind: simhw.FaultXid, Xid: 79})
	c.WaitFor(t, 20*time.Second, "gpu03 drained by gpuwatch", func() bool {
		st := c.NodeState(t, "gpu03")
		return strings.HasPrefix(reason(t, c, "gpu03"), "gpuwatch: ") && (st == "drained" || st == "draining")
	})
	t.Logf("Xid 79 injected → reboot refused → Slurm shows %q (%s) after %s", reason(t, c, "gpu03"), c.NodeState(t, "gpu03"), time.Since(at).Round(time.Millisecond))
	recs := ds.audit()
	var refused []drain.AuditRecord
	for _, r := range recs {
		if r.Node == "gpu03" && r.Outcome == drain.OutcomeRefused {
			refused = append(refused, r)
		}
	}
	if len(refused) != 1 || !strings.HasPrefix(refused[0].Note, "reboot refused: ") || !strings.HasSuffix(refused[0].Note, "; drained instead") {
		t.Errorf("audit lacks one refused reboot noting the drain instead:\n%s", dump(recs, "gpu03"))
	}
	if countAudit(recs, "gpu03", "actuation", "cordon", drain.OutcomeAccepted) != 1 {
		t.Errorf("audit lacks one accepted drain (cordon) of gpu03:\n%s", dump(recs, "gpu03"))
	}
	job := c.Submit(t, "sleep 30", "-w", "gpu03", "--gres=gpu:h100:1")
	defer c.Run(t, "scancel", job)
	time.Sleep(2 * time.Second)
	if st := c.JobState(t, job); st == "RUNNING" {
		t.Errorf("a new job started on gpu03 after its reboot was refused")
	}
	n, _ := ds.srv.Drain().Node("gpu03")
	if n.Stuck != "" || n.State != telemetry.StateDrained {
		t.Errorf("controller: gpu03 %s stuck=%q; want drained, not held", n.State, n.Stuck)
	}
}
