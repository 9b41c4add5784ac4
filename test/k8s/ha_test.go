package k8s

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/gpuwatch/gpuwatch/collector/simhw"
	"github.com/gpuwatch/gpuwatch/internal/server"
	"github.com/gpuwatch/gpuwatch/scheduler/adapters/kube"
	"github.com/gpuwatch/gpuwatch/scheduler/drain"
)

// apiWrites counts the API calls one replica makes that change something
// (every verb but get, list and watch, Lease calls apart: campaigning is not
// acting), and its evictions that succeeded, by pod.
type apiWrites struct {
	mu        sync.Mutex
	writes    []string
	evictions map[string]int
}

func (a *apiWrites) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(req *http.Request) (*http.Response, error) {
		resp, err := rt.RoundTrip(req)
		if req.Method == http.MethodGet || strings.Contains(req.URL.Path, "/leases") {
			return resp, err
		}
		a.mu.Lock()
		defer a.mu.Unlock()
		a.writes = append(a.writes, req.Method+" "+req.URL.Path)
		if pod, ok := strings.CutSuffix(req.URL.Path, "/eviction"); ok && err == nil && resp.StatusCode/100 == 2 {
			a.evictions[pod[strings.LastIndexByte(pod, '/')+1:]]++
		}
		return resp, err
	})
}

func (a *apiWrites) count() (writes int, evictions map[string]int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	ev := map[string]int{}
	for k, v := range a.evictions {
		ev[k] = v
	}
	return len(a.writes), ev
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// replica is one of two gpuwatch servers electing a leader through a real
// Lease, with the Kubernetes actuator on the chart's ServiceAccount.
type replica struct {
	t    *testing.T
	name string
	srv  *server.Server
	url  string
	api  *apiWrites
	gw   *gpuwatch // the test's reads and control calls
	kill func()
}

// leaderService is the chart's Service that reaches the acting leader, whose
// EndpointSlice the replicas write (the chart's Role lets them read and
// update the slice of this name only).
const leaderService = "gpuwatch-server-leader"

// startReplica runs a gpuwatch server named name (its identity in the Lease
// releaseNamespace/lease) on a loopback port; as the acting leader it points
// the Service leaderService at podIP and that port (the API server refuses a
// loopback endpoint; no kube-proxy routes to it here).
func startReplica(t *testing.T, name, lease, podIP string, workloads func(string, []string) []string) *replica {
	t.Helper()
	api := &apiWrites{evictions: map[string]int{}}
	cfg := serverConfig(t)
	cfg.Wrap(api.wrap)
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	el, err := kube.NewElector(cs, kube.ElectorOptions{Namespace: releaseNamespace, Name: lease, Identity: name})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ls, err := kube.NewLeaderService(cs, kube.LeaderServiceOptions{Namespace: releaseNamespace, Name: leaderService, Identity: name,
		Address: netip.AddrPortFrom(netip.MustParseAddr(podIP), uint16(ln.Addr().(*net.TCPAddr).Port))})
	if err != nil {
		ln.Close()
		t.Fatal(err)
	}
	srv, err := server.New(server.Options{DataDir: t.TempDir(), StateDir: t.TempDir(), Version: "k8s-e2e", Elector: el, LeaderService: ls,
		Drain: &server.DrainOptions{Policy: drainPolicy(), Actuator: kube.New(cs, kube.Options{}), ActuatorName: "kubernetes",
			PollInterval: 100 * time.Millisecond, CallTimeout: 10 * time.Second, Workloads: workloads}})
	if err != nil {
		ln.Close()
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	runDone := make(chan struct{})
	go func() { srv.Run(ctx); close(runDone) }()
	hs := srv.HTTPServer()
	go hs.Serve(ln)
	r := &replica{t: t, name: name, srv: srv, url: "http://" + ln.Addr().String(), api: api}
	r.gw = &gpuwatch{t: t, srv: srv, url: r.url, client: http.DefaultClient}
	// Killed: the run context cancelled (the Lease is not released: the
	// Elector never does), the listener and its connections closed at once.
	r.kill = sync.OnceFunc(func() {
		cancel()
		hs.HTTP().Close()
		<-runDone
		srv.Close(context.Background())
	})
	t.Cleanup(r.kill)
	return r
}

// installLeaderService creates the chart's leader Service (haValues), as
// Helm would, and deletes it and its EndpointSlice after the test.
func installLeaderService(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	svc := find[*corev1.Service](t, renderChart(t, haValues), "v1/Service", leaderService)
	if _, err := cp.client.CoreV1().Services(releaseNamespace).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cp.client.CoreV1().Services(releaseNamespace).Delete(context.Background(), leaderService, metav1.DeleteOptions{})
		cp.client.DiscoveryV1().EndpointSlices(releaseNamespace).Delete(context.Background(), leaderService, metav1.DeleteOptions{})
	})
}

// leaderSliceNames is a poll condition: the leader Service's EndpointSlice
// sends its port, by name, to r alone at ip and r's port, ready, labelled
// for the Service and as gpuwatch's.
func leaderSliceNames(r *replica, ip string) func() (bool, error) {
	return func() (bool, error) {
		es, err := cp.client.DiscoveryV1().EndpointSlices(releaseNamespace).Get(context.Background(), leaderService, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		svc, err := cp.client.CoreV1().Services(releaseNamespace).Get(context.Background(), leaderService, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		_, port, _ := strings.Cut(strings.TrimPrefix(r.url, "http://"), ":")
		ok := es.Labels[discoveryv1.LabelServiceName] == leaderService && es.Labels[discoveryv1.LabelManagedBy] == kube.ManagedBy &&
			es.AddressType == discoveryv1.AddressTypeIPv4 && len(es.Endpoints) == 1 && slices.Equal(es.Endpoints[0].Addresses, []string{ip}) &&
			es.Endpoints[0].Conditions.Ready != nil && *es.Endpoints[0].Conditions.Ready &&
			es.Endpoints[0].TargetRef != nil && es.Endpoints[0].TargetRef.Name == r.name &&
			len(es.Ports) == 1 && es.Ports[0].Port != nil && fmt.Sprint(*es.Ports[0].Port) == port &&
			es.Ports[0].Name != nil && len(svc.Spec.Ports) == 1 && *es.Ports[0].Name == svc.Spec.Ports[0].Name
		return ok, fmt.Errorf("labels %v, type %s, endpoints %+v, ports %s", es.Labels, es.AddressType, es.Endpoints, portsString(es.Ports))
	}
}

func portsString(ps []discoveryv1.EndpointPort) string {
	var out []string
	for _, p := range ps {
		if p.Name != nil && p.Port != nil {
			out = append(out, fmt.Sprintf("%s:%d", *p.Name, *p.Port))
		}
	}
	return strings.Join(out, ",")
}

// sliceWrites are w's changing calls on EndpointSlices.
func sliceWrites(a *apiWrites) []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []string
	for _, w := range a.writes {
		if strings.Contains(w, "/endpointslices") {
			out = append(out, w)
		}
	}
	return out
}

func (r *replica) leader() server.LeaderStatus {
	r.t.Helper()
	var st server.LeaderStatus
	if err := r.gw.get("/api/gpuwatch/v1/leader", &st); err != nil {
		r.t.Fatal(err)
	}
	return st
}

// audit reads the replica's audit log from its file (also once it is killed).
func (r *replica) audit() []drain.AuditRecord {
	r.t.Helper()
	recs, err := r.srv.Drain().Audit(time.Time{}, 0)
	if err != nil {
		r.t.Fatal(err)
	}
	return recs
}

func countAudit(recs []drain.AuditRecord, f func(drain.AuditRecord) bool) int {
	n := 0
	for _, r := range recs {
		if f(r) {
			n++
		}
	}
	return n
}

// TestLeaderKilledMidDrain proves "a server that can be lost" on the real API
// server. Two gpuwatch servers elect a leader through a real Lease with the
// chart's ServiceAccount; the agents push to both. An Xid 79 drains a node
// whose GPU pod a PodDisruptionBudget protects: the leader cordons and taints
// it, and its eviction is answered 429 and retried. While the leader lives,
// the follower makes no API call that changes anything and answers control
// requests 503 naming the leader. The leader is killed (the Lease not
// released, its listener closed); the follower takes over within 15 s:
// adopts the drain from the Node's taint and annotations (audited), issues the
// eviction again, which goes through once the budget allows. The drain
// completed exactly once (one successful eviction, one transition to drained
// across both audit logs, one taint, set by the first leader), and a resume
// through the new leader leaves nothing gpuwatch owns on the Node, while an
// administrator's cordon of another node stays. The chart's leader Service
// follows the acting leader: its EndpointSlice names server-0 (created once)
// while it acts and server-1 (updated once) within 15 s of server-0's kill;
// the follower's 503 names that Service.
func TestLeaderKilledMidDrain(t *testing.T) {
	const ns, suite, prefix, lease = "ha", "ha", "ha-", "ha-takeover"
	ctx := context.Background()
	createNamespace(t, ns)
	installServerRBAC(t)
	work := map[string][]string{}
	workloads := func(_ string, gpus []string) []string {
		var out []string
		for _, u := range gpus {
			out = append(out, work[u]...)
		}
		return out
	}
	installLeaderService(t)
	const ipA, ipB = "10.244.0.10", "10.244.1.10"
	a := startReplica(t, "gpuwatch-server-0", lease, ipA, workloads)
	poll(t, 30*time.Second, "server-0 leads and acts", func() (bool, error) { return a.leader().Acting, nil })
	poll(t, 15*time.Second, "the leader Service's EndpointSlice names server-0", leaderSliceNames(a, ipA))
	b := startReplica(t, "gpuwatch-server-1", lease, ipB, workloads)
	poll(t, 30*time.Second, "server-1 sees server-0 lead", func() (bool, error) {
		st := b.leader()
		return st.Leader == a.name && !st.Acting, fmt.Errorf("%+v", st)
	})

	fl := startFleetShipping(t, prefix, 2, "", a.url+","+b.url, nil)
	createNodes(t, suite, fl.names, 8)
	node, adminNode := fl.names[0], fl.names[1]
	work[fl.gpuUUID(0, 3)] = []string{ns + "/on-gpu-3"}
	an := getNode(t, adminNode)
	an.Spec.Unschedulable = true
	if _, err := cp.client.CoreV1().Nodes().Update(ctx, an, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	boundPod(t, ns, "on-gpu-3", node)
	blockingPDB(t, ns, "on-gpu-3")

	fl.inject(0, simhw.Fault{Kind: simhw.FaultXid, Xid: 79, GPU: 3})
	poll(t, 60*time.Second, node+" cordoned and tainted by the leader", func() (bool, error) {
		n := getNode(t, node)
		return n.Spec.Unschedulable && hasTaint(n, kube.TaintKey) && n.Annotations[kube.AnnotationReason] != "", fmt.Errorf("taints %+v", n.Spec.Taints)
	})
	poll(t, 60*time.Second, "the leader's eviction refused twice by the PodDisruptionBudget", func() (bool, error) {
		n := countAudit(a.audit(), func(r drain.AuditRecord) bool {
			return r.Node == node && r.Action == "evacuate" && r.Outcome == drain.OutcomeRetrying && strings.Contains(r.Error, "PodDisruptionBudget")
		})
		return n >= 2, fmt.Errorf("%d", n)
	})
	drained := getNode(t, node)
	var taintAdded time.Time
	for _, tt := range drained.Spec.Taints {
		if tt.Key == kube.TaintKey && tt.TimeAdded != nil {
			taintAdded = tt.TimeAdded.Time
		}
	}
	reason := drained.Annotations[kube.AnnotationReason]

	// The follower, while the leader lives: no change through the API, no
	// actuation in its audit log, control requests refused naming the leader.
	if w, _ := b.api.count(); w != 0 {
		t.Errorf("the follower made %d changing API calls while the leader lived: %v", w, b.api.writes)
	}
	if n := countAudit(b.audit(), func(r drain.AuditRecord) bool { return r.Event == "actuation" || r.Event == "decision" }); n != 0 {
		t.Errorf("the follower's audit log has %d decisions and actuations", n)
	}
	err := b.gw.post("/api/gpuwatch/v1/resume", drain.ManualRequest{Node: node, User: "oncall"}, nil)
	if err == nil || !strings.Contains(err.Error(), "503") || !strings.Contains(err.Error(), a.name) ||
		!strings.Contains(err.Error(), leaderService+"."+releaseNamespace+".svc") {
		t.Errorf("resume sent to the follower: %v; want 503 naming %s and the leader Service", err, a.name)
	}
	if ok, err := leaderSliceNames(a, ipA)(); !ok {
		t.Errorf("with a follower, the leader Service's EndpointSlice: %v", err)
	}
	if st := b.leader(); st.Acting || st.Leader != a.name {
		t.Errorf("the follower says %+v", st)
	}

	// Kill the leader mid-drain.
	killed := time.Now()
	a.kill()
	poll(t, 30*time.Second, "server-1 takes over", func() (bool, error) { return b.leader().Acting, nil })
	took := time.Since(killed)
	t.Logf("server-1 acting %s after server-0 was killed (lease 8 s, retry 1 s)", took.Round(time.Millisecond))
	if took > 15*time.Second {
		t.Errorf("takeover took %s, want within 15 s", took)
	}
	poll(t, 15*time.Second-took, "the leader Service's EndpointSlice names server-1 within 15 s of the kill", leaderSliceNames(b, ipB))
	t.Logf("the leader Service reaches server-1 %s after server-0 was killed", time.Since(killed).Round(time.Millisecond))
	recs := b.audit()
	if n := countAudit(recs, func(r drain.AuditRecord) bool {
		return r.Node == node && r.Event == "takeover" && r.Action == "adopt" && r.To == "drained" && r.Reason == reason
	}); n != 1 {
		t.Errorf("the new leader's audit log has %d adoptions of %s, want 1", n, node)
	}
	poll(t, 30*time.Second, "the new leader's eviction refused by the PodDisruptionBudget", func() (bool, error) {
		n := countAudit(b.audit(), func(r drain.AuditRecord) bool {
			return r.Node == node && r.Action == "evacuate" && r.Outcome == drain.OutcomeRetrying
		})
		return n >= 1, fmt.Errorf("%d", n)
	})
	if g, _ := gone(ns, "on-gpu-3"); g {
		t.Fatal("on-gpu-3 evicted despite its PodDisruptionBudget")
	}
	if err := cp.client.PolicyV1().PodDisruptionBudgets(ns).Delete(ctx, "on-gpu-3", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	poll(t, 60*time.Second, "on-gpu-3 evicted by the new leader", func() (bool, error) { return gone(ns, "on-gpu-3") })
	poll(t, 30*time.Second, "the eviction audited", func() (bool, error) {
		n := countAudit(b.audit(), func(r drain.AuditRecord) bool {
			return r.Node == node && r.Action == "evacuate" && r.Outcome == drain.OutcomeAccepted
		})
		return n == 1, fmt.Errorf("%d", n)
	})

	// Exactly once, across both replicas.
	both := append(a.audit(), b.audit()...)
	for _, c := range []struct {
		what string
		want int
		f    func(drain.AuditRecord) bool
	}{
		{"transitions to drained", 1, func(r drain.AuditRecord) bool { return r.Event == "transition" && r.To == "drained" }},
		{"accepted drains", 1, func(r drain.AuditRecord) bool {
			return r.Event == "actuation" && r.Action == string(drain.ModeDrain) && r.Outcome == drain.OutcomeAccepted
		}},
		{"accepted evacuations", 1, func(r drain.AuditRecord) bool {
			return r.Event == "actuation" && r.Action == "evacuate" && r.Outcome == drain.OutcomeAccepted
		}},
		{"drain decisions", 1, func(r drain.AuditRecord) bool { return r.Event == "decision" && r.Action == string(drain.ModeDrain) }},
	} {
		if n := countAudit(both, func(r drain.AuditRecord) bool { return r.Node == node && c.f(r) }); n != c.want {
			t.Errorf("%s of %s across both audit logs: %d, want %d", c.what, node, n, c.want)
		}
	}
	_, evA := a.api.count()
	_, evB := b.api.count()
	if evA["on-gpu-3"]+evB["on-gpu-3"] != 1 || evB["on-gpu-3"] != 1 {
		t.Errorf("successful evictions of on-gpu-3: %d by server-0, %d by server-1; want one, by server-1", evA["on-gpu-3"], evB["on-gpu-3"])
	}
	n := getNode(t, node)
	taints := 0
	for _, tt := range n.Spec.Taints {
		if tt.Key == kube.TaintKey {
			taints++
			if tt.TimeAdded == nil || !tt.TimeAdded.Time.Equal(taintAdded) {
				t.Errorf("gpuwatch's taint was set again: added %v, first %v", tt.TimeAdded, taintAdded)
			}
		}
	}
	if taints != 1 || n.Annotations[kube.AnnotationReason] != reason || n.Annotations[kube.AnnotationCordoned] != "true" {
		t.Errorf("after the takeover: %d gpuwatch taints, annotations %v", taints, n.Annotations)
	}

	// The new leader changed nothing on the Node: its only changing calls
	// were evictions, and one update of the leader Service's EndpointSlice
	// (its later publications found it right and only read it). The first
	// leader created the slice, once.
	b.api.mu.Lock()
	for _, w := range b.api.writes {
		if !strings.HasSuffix(w, "/eviction") && !strings.Contains(w, "/endpointslices") {
			t.Errorf("the new leader changed more than pods and its Service before the resume: %s", w)
		}
	}
	b.api.mu.Unlock()
	path := "/apis/discovery.k8s.io/v1/namespaces/" + releaseNamespace + "/endpointslices"
	if w := sliceWrites(b.api); !slices.Equal(w, []string{"PUT " + path + "/" + leaderService}) {
		t.Errorf("the new leader's EndpointSlice writes %q, want one update", w)
	}
	if w := sliceWrites(a.api); !slices.Equal(w, []string{"POST " + path}) {
		t.Errorf("the first leader's EndpointSlice writes %q, want one create", w)
	}

	// Nothing orphaned: a resume through the new leader removes all of it.
	if err := b.gw.post("/api/gpuwatch/v1/resume", drain.ManualRequest{Node: node, Reason: "GPU 3 replaced", User: "oncall"}, nil); err != nil {
		t.Fatalf("resume through the new leader: %v", err)
	}
	poll(t, 30*time.Second, node+" back in service", func() (bool, error) {
		n := getNode(t, node)
		return !n.Spec.Unschedulable && !hasTaint(n, kube.TaintKey), fmt.Errorf("unschedulable %v, taints %+v", n.Spec.Unschedulable, n.Spec.Taints)
	})
	n = getNode(t, node)
	for _, k := range []string{kube.AnnotationReason, kube.AnnotationCordoned, kube.AnnotationReboot} {
		if _, ok := n.Annotations[k]; ok {
			t.Errorf("after the resume: annotation %s left", k)
		}
	}
	if c := condition(n, kube.ConditionType); c == nil || c.Status != corev1.ConditionTrue {
		t.Errorf("after the resume: condition %s = %+v, want True (resumed)", kube.ConditionType, c)
	}
	an = getNode(t, adminNode)
	if !an.Spec.Unschedulable || hasTaint(an, kube.TaintKey) || len(an.Annotations) > 0 && an.Annotations[kube.AnnotationReason] != "" {
		t.Errorf("the administrator's cordoned node: unschedulable %v, taints %+v, annotations %v", an.Spec.Unschedulable, an.Spec.Taints, an.Annotations)
	}
	if w, _ := a.api.count(); w == 0 {
		t.Error("server-0 made no changing API call: the test proved nothing about the follower")
	}
}
