package k8s

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/gpuwatch/gpuwatch/collector/agent"
	"github.com/gpuwatch/gpuwatch/collector/simhw"
	"github.com/gpuwatch/gpuwatch/internal/server"
	"github.com/gpuwatch/gpuwatch/scheduler/placement/service"
)

// suiteLabel keeps each test's pods on its own nodes (the control plane is
// shared).
const suiteLabel = "gpuwatch.test/suite"

// fleet is a simulated GPU fleet with a real gpuwatch agent per node, named
// <prefix>node-01…, whose clock follows the wall clock; the agents remote-write
// their series and push their health reports to the gpuwatch server behind
// extenderFront.
type fleet struct {
	t      *testing.T
	sim    *simhw.Fleet
	names  []string
	agents []*agent.Agent
	stop   func() // stops the agents (the nodes go silent)
}

func startFleet(t *testing.T, prefix string, nodes int) *fleet {
	t.Helper()
	return startFleetTo(t, prefix, nodes, extenderFront.url(), nil)
}

// startFleetTo is startFleet whose agents ship to the gpuwatch server at base
// through transport (nil: Go's default; a bearer token and a CA for a server
// with authentication and TLS).
func startFleetTo(t *testing.T, prefix string, nodes int, base string, transport http.RoundTripper) *fleet {
	t.Helper()
	return startFleetShipping(t, prefix, nodes, base+"/api/v1/write", base, transport)
}

// startFleetShipping is startFleet whose agents remote-write to remoteWrite
// ("": nowhere) and push their health reports to servers (comma-separated,
// as the agent's --server takes several replicas).
func startFleetShipping(t *testing.T, prefix string, nodes int, remoteWrite, servers string, transport http.RoundTripper) *fleet {
	t.Helper()
	f, err := simhw.NewFleet(simhw.FleetSpec{Nodes: nodes, NodesPerLeaf: 2, Seed: 7, Root: t.TempDir(), Start: time.Now().Truncate(time.Second)})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Advance(0); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	fl := &fleet{t: t, sim: f}
	var stops []func()
	for _, n := range f.Nodes() {
		boot := n.Boot()
		name := prefix + n.Name()
		a, err := agent.New(agent.Options{
			Node: name, NVML: n.NVML(), SysfsRoot: n.SysRoot(), ProcRoot: n.ProcRoot(), KmsgPath: n.KmsgPath(),
			KmsgFromStart: true, KmsgPoll: 5 * time.Millisecond, BootTime: func() (time.Time, error) { return boot, nil },
			BootID: "boot-1", DCGMDisable: true, KubeletSocket: "-", Now: f.Now,
			NVLinkDomain: n.NVLinkDomain(), Leaf: n.Leaf(), Spine: n.Spine(), Block: n.Block(),
			Interval: time.Second, HealthInterval: 500 * time.Millisecond,
			RemoteWriteURL: remoteWrite, QueueDir: t.TempDir(), ServerURL: servers, Transport: transport, Version: "k8s-e2e",
		})
		if err != nil {
			cancel()
			t.Fatal(err)
		}
		actx, acancel := context.WithCancel(ctx)
		wait := a.Start(actx)
		stops = append(stops, func() { acancel(); wait(); a.Close() })
		fl.agents = append(fl.agents, a)
		fl.names = append(fl.names, name)
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
			for _, a := range fl.agents {
				a.Collect(ctx, true)
			}
			select {
			case <-ctx.Done():
			case <-time.After(500*time.Millisecond - time.Since(now)%(500*time.Millisecond)):
			}
		}
	}()
	fl.stop = sync.OnceFunc(func() {
		cancel()
		<-done
		for _, stop := range stops {
			stop()
		}
	})
	t.Cleanup(fl.stop)
	return fl
}

// inject applies a simulated hardware fault to node i now.
func (f *fleet) inject(i int, fault simhw.Fault) {
	f.t.Helper()
	if err := f.sim.Nodes()[i].Inject(fault); err != nil {
		f.t.Fatal(err)
	}
}

// gpuwatch is a real gpuwatch server (internal/server, as `gpuwatch server`
// runs it) serving on extenderFront's address, where kube-scheduler calls its
// extender.
type gpuwatch struct {
	t       *testing.T
	srv     *server.Server
	url     string
	client  *http.Client // the test's own calls (a read token with authentication)
	stopped bool
	stopFn  func()
	mu      sync.Mutex
}

func startGpuwatch(t *testing.T, opts server.Options) *gpuwatch {
	t.Helper()
	ln, err := extenderFront.listen()
	if err != nil {
		t.Fatal(err)
	}
	return startGpuwatchOn(t, opts, ln, extenderFront.url(), http.DefaultClient)
}

// startGpuwatchOn runs a gpuwatch server on ln, reached at url; the test's
// own calls to it go through client.
func startGpuwatchOn(t *testing.T, opts server.Options, ln net.Listener, url string, client *http.Client) *gpuwatch {
	t.Helper()
	if opts.DataDir == "" {
		opts.DataDir = t.TempDir()
	}
	opts.Version = "k8s-e2e"
	if opts.Placement == nil {
		opts.Placement = &server.PlacementOptions{Interval: 2 * time.Second}
	}
	srv, err := server.New(opts)
	if err != nil {
		ln.Close()
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	runDone := make(chan struct{})
	go func() { srv.Run(ctx); close(runDone) }()
	hs := srv.HTTPServer()
	serveDone := make(chan struct{})
	go func() { hs.Serve(ln); close(serveDone) }()
	g := &gpuwatch{t: t, srv: srv, url: url, client: client}
	g.stopFn = func() {
		sctx, scancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer scancel()
		hs.Shutdown(sctx)
		<-serveDone
		cancel()
		<-runDone
		srv.Close(context.Background())
	}
	t.Cleanup(g.stop)
	return g
}

// stop stops the server: kube-scheduler's calls to the extender are refused.
func (g *gpuwatch) stop() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.stopped {
		g.stopped = true
		g.stopFn()
	}
}

// get decodes GET path's JSON answer into out.
func (g *gpuwatch) get(path string, out any) error {
	resp, err := g.client.Get(g.url + path)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s: %s", path, resp.Status, body)
	}
	return json.Unmarshal(body, out)
}

// post sends in as JSON to path and decodes the answer into out.
func (g *gpuwatch) post(path string, in, out any) error {
	data, err := json.Marshal(in)
	if err != nil {
		return err
	}
	resp, err := g.client.Post(g.url+path, "application/json", bytes.NewReader(data))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("POST %s: %s: %s", path, resp.Status, body)
	}
	if out == nil {
		return nil
	}
	return json.Unmarshal(body, out)
}

// waitSnapshot waits until the placement snapshot is fresh and cond holds.
func (g *gpuwatch) waitSnapshot(what string, cond func(service.SnapshotSummary) bool) service.SnapshotSummary {
	g.t.Helper()
	var last service.SnapshotSummary
	var lastErr error
	deadline := time.Now().Add(90 * time.Second)
	for time.Now().Before(deadline) {
		var s service.SnapshotSummary
		if lastErr = g.get("/api/gpuwatch/v1/placement/snapshot?nodes=true", &s); lastErr == nil {
			last = s
			if s.Fresh && cond(s) {
				return s
			}
		}
		time.Sleep(250 * time.Millisecond)
	}
	g.t.Fatalf("placement snapshot: %s not within 90 s; last: %+v (err %v)", what, last, lastErr)
	return last
}

// metric returns the value of the series of name whose labels contain every
// label="value" pair of match, from the server's /metrics (0 when absent).
func (g *gpuwatch) metric(name string, match ...string) float64 {
	g.t.Helper()
	resp, err := g.client.Get(g.url + "/metrics")
	if err != nil {
		g.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var sum float64
lines:
	for _, line := range strings.Split(string(body), "\n") {
		if !strings.HasPrefix(line, name+"{") && !strings.HasPrefix(line, name+" ") {
			continue
		}
		for _, m := range match {
			if !strings.Contains(line, m) {
				continue lines
			}
		}
		var v float64
		if _, err := fmt.Sscan(line[strings.LastIndexByte(line, ' ')+1:], &v); err == nil {
			sum += v
		}
	}
	return sum
}

// createNodes registers names as Kubernetes nodes with 8 GPUs each, labelled
// for the test's suite, Ready, as a kubelet with the NVIDIA device plugin would
// report them.
func createNodes(t *testing.T, suite string, names []string, gpus int) {
	t.Helper()
	ctx := context.Background()
	for _, name := range names {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
			"kubernetes.io/hostname": name, suiteLabel: suite}}}
		created, err := cp.client.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("create node %s: %v", name, err)
		}
		res := corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse("64"), corev1.ResourceMemory: resource.MustParse("512Gi"),
			corev1.ResourcePods: resource.MustParse("110"), "nvidia.com/gpu": *resource.NewQuantity(int64(gpus), resource.DecimalSI),
		}
		created.Status = corev1.NodeStatus{Capacity: res, Allocatable: res, Phase: corev1.NodeRunning,
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady",
				LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now()}}}
		if _, err := cp.client.CoreV1().Nodes().UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
			t.Fatalf("node %s status: %v", name, err)
		}
	}
	t.Cleanup(func() {
		for _, name := range names {
			cp.client.CoreV1().Nodes().Delete(context.Background(), name, metav1.DeleteOptions{})
		}
	})
}

// createNamespace makes a namespace for the test, deleted after it.
func createNamespace(t *testing.T, name string) {
	t.Helper()
	if _, err := cp.client.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cp.client.CoreV1().Namespaces().Delete(context.Background(), name, metav1.DeleteOptions{}) })
}

// gpuPod is a pod asking gpus nvidia.com/gpu, kept on the suite's nodes.
func gpuPod(ns, name, suite string, gpus int, ann map[string]string) *corev1.Pod {
	lim := corev1.ResourceList{"nvidia.com/gpu": *resource.NewQuantity(int64(gpus), resource.DecimalSI)}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Annotations: ann, Labels: map[string]string{"app": name}},
		Spec: corev1.PodSpec{
			NodeSelector: map[string]string{suiteLabel: suite},
			Containers: []corev1.Container{{Name: "train", Image: "registry.invalid/train:1",
				Resources: corev1.ResourceRequirements{Limits: lim, Requests: lim}}},
			TerminationGracePeriodSeconds: new(int64),
		},
	}
}

// waitBound waits until kube-scheduler binds the pod and returns its node.
func waitBound(t *testing.T, c kubernetes.Interface, ns, name string) string {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	var last *corev1.Pod
	for time.Now().Before(deadline) {
		p, err := c.CoreV1().Pods(ns).Get(context.Background(), name, metav1.GetOptions{})
		if err == nil {
			last = p
			if p.Spec.NodeName != "" {
				return p.Spec.NodeName
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	var conds []string
	if last != nil {
		for _, c := range last.Status.Conditions {
			conds = append(conds, fmt.Sprintf("%s=%s %s: %s", c.Type, c.Status, c.Reason, c.Message))
		}
	}
	t.Fatalf("pod %s/%s not bound within 60 s; conditions: %s", ns, name, strings.Join(conds, "; "))
	return ""
}

// setRunning marks the pod Running and Ready through the status subresource,
// as its node's kubelet would.
func setRunning(t *testing.T, ns, name string) {
	t.Helper()
	ctx := context.Background()
	p, err := cp.client.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	now := metav1.Now()
	p.Status.Phase = corev1.PodRunning
	p.Status.StartTime = &now
	p.Status.Conditions = []corev1.PodCondition{
		{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: now},
		{Type: corev1.PodInitialized, Status: corev1.ConditionTrue, LastTransitionTime: now},
		{Type: corev1.ContainersReady, Status: corev1.ConditionTrue, LastTransitionTime: now},
		{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: now},
	}
	p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "train", Ready: true, Image: p.Spec.Containers[0].Image,
		ImageID: "sha256:0", ContainerID: "containerd://" + name, Started: new(bool),
		State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}}}}
	*p.Status.ContainerStatuses[0].Started = true
	if _, err := cp.client.CoreV1().Pods(ns).UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("pod %s/%s status: %v", ns, name, err)
	}
}

// poll calls cond every 100 ms until it holds or timeout passes.
func poll(t *testing.T, timeout time.Duration, what string, cond func() (bool, error)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var err error
	for time.Now().Before(deadline) {
		var ok bool
		if ok, err = cond(); ok {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err == nil {
		err = errors.New("condition false")
	}
	t.Fatalf("%s: not within %s: %v", what, timeout, err)
}
