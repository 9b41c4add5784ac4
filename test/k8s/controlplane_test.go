package k8s

import (
	"context"
	"flag"
	"fmt"
	"log"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/spf13/pflag"
	"go.etcd.io/etcd/server/v3/embed"
	"k8s.io/apiserver/pkg/storage/storagebackend"
	utilcompatibility "k8s.io/apiserver/pkg/util/compatibility"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/scale"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	basecompatibility "k8s.io/component-base/compatibility"
	"k8s.io/component-base/configz"
	"k8s.io/klog/v2"
	kubeapiservertesting "k8s.io/kubernetes/cmd/kube-apiserver/app/testing"
	schedapp "k8s.io/kubernetes/cmd/kube-scheduler/app"
	scheduleroptions "k8s.io/kubernetes/cmd/kube-scheduler/app/options"
	"k8s.io/kubernetes/pkg/controller/disruption"
	"k8s.io/kubernetes/test/utils/ktesting"
)

// cp is the control plane the tests share (TestMain starts it).
var cp *controlPlane

// extenderFront is where kube-scheduler finds gpuwatch's extender: a loopback
// address reserved before the scheduler starts, served by whichever gpuwatch
// server a test runs (see front).
var extenderFront *front

func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	verbose := os.Getenv("GPUWATCH_K8S_VERBOSE") != ""
	if !verbose {
		// The components log through klog; without a kubelet much of it is
		// noise (nodes not ready, no endpoints). GPUWATCH_K8S_VERBOSE=1 keeps it.
		klog.SetLogger(logr.Discard())
	}
	var err error
	extenderFront, err = newFront()
	if err != nil {
		fmt.Fprintln(os.Stderr, "k8s harness:", err)
		return 1
	}
	start := time.Now()
	cp, err = startControlPlane(verbose, extenderFront.url()+"/api/gpuwatch/v1/extender")
	if err != nil {
		fmt.Fprintln(os.Stderr, "k8s harness: cannot start the control plane:", err)
		if cp != nil {
			cp.stop()
		}
		return 1
	}
	fmt.Fprintf(os.Stderr, "k8s harness: etcd, kube-apiserver, kube-scheduler and the disruption controller up in %s\n", time.Since(start).Round(time.Millisecond))
	code := m.Run()
	if code == 0 {
		code = checkRBAC()
	}
	cp.stop()
	return code
}

// checkRBAC compares, after a run of every test, the chart's RBAC for the
// server with the API calls the tests saw gpuwatch make (chart_test.go).
func checkRBAC() int {
	if f := flag.Lookup("test.run"); f != nil && f.Value.String() != "" {
		fmt.Fprintln(os.Stderr, "k8s harness: -run given: the chart's RBAC is compared with the calls of a full run only")
		return 0
	}
	if len(serverRBAC.rules) == 0 {
		fmt.Fprintln(os.Stderr, "k8s harness: FAIL: no test installed the chart's RBAC")
		return 1
	}
	diff := compareRBAC()
	if len(diff) == 0 {
		fmt.Fprintf(os.Stderr, "k8s harness: the chart's RBAC equals the %d kinds of API call gpuwatch made\n", len(recorded.calls))
		return 0
	}
	fmt.Fprintln(os.Stderr, "k8s harness: FAIL: the chart's RBAC (deploy/helm/gpuwatch/templates/rbac.yaml) is not what gpuwatch uses:")
	for _, d := range diff {
		fmt.Fprintln(os.Stderr, "  "+d)
	}
	return 1
}

// controlPlane is an embedded etcd, kube-apiserver, kube-scheduler and
// disruption controller.
type controlPlane struct {
	// admin is system:masters (the API server's loopback identity).
	admin       *rest.Config
	client      kubernetes.Interface
	kubeconfig  string // admin kubeconfig file
	schedConfig string // the KubeSchedulerConfiguration file the scheduler runs
	tb          *mainTB

	cancel   context.CancelFunc
	stops    []func() // in reverse order of start
	stopOnce sync.Once
}

func (c *controlPlane) stop() {
	c.stopOnce.Do(func() {
		if c.cancel != nil {
			c.cancel()
		}
		for i := len(c.stops) - 1; i >= 0; i-- {
			c.stops[i]()
		}
		c.tb.cleanup()
	})
}

// schedulerConfig is the KubeSchedulerConfiguration of docs/kubernetes.md, with
// the extender at urlPrefix. Weight 100 lets gpuwatch's ranking (0..10 × 100 ×
// 10) outweigh the in-tree scoring plugins (at most 100 each × their weight),
// so a pod lands where gpuwatch ranks best; ties go to the in-tree plugins.
const schedulerConfig = `apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection:
  kubeconfig: %q
leaderElection:
  leaderElect: false
extenders:
  - urlPrefix: %q
    filterVerb: filter
    prioritizeVerb: prioritize
    weight: 100
    nodeCacheCapable: true
    ignorable: true
    httpTimeout: 5s
    enableHTTPS: false
    managedResources:
      - name: nvidia.com/gpu
        ignoredByScheduler: false
`

func startControlPlane(verbose bool, extenderURL string) (*controlPlane, error) {
	dir, err := os.MkdirTemp("", "gpuwatch-k8s-")
	if err != nil {
		return nil, err
	}
	c := &controlPlane{tb: &mainTB{verbose: verbose, dir: dir}}
	c.stops = append(c.stops, func() { os.RemoveAll(dir) })
	ctx, cancel := context.WithCancel(context.Background())
	c.cancel = cancel

	etcdURL, stopEtcd, err := startEtcd(filepath.Join(dir, "etcd"), verbose)
	if err != nil {
		return c, err
	}
	c.stops = append(c.stops, stopEtcd)

	storage := storagebackend.NewDefaultConfig("/registry", nil)
	storage.Transport.ServerList = []string{etcdURL}
	tctx := ktesting.InitCtx(ctx, c.tb)
	api, err := kubeapiservertesting.StartTestServer(tctx, kubeapiservertesting.NewDefaultTestServerOptions(), []string{
		"--authorization-mode=RBAC",
		// As kubeadm's and most clusters' API servers: the agent's DaemonSet
		// is privileged.
		"--allow-privileged=true",
		// No ServiceAccount controller runs (the tests create their accounts),
		// and no kubelet reports nodes ready, so the node.kubernetes.io/not-ready
		// taint TaintNodesByCondition would add would never go away.
		"--disable-admission-plugins=ServiceAccount,TaintNodesByCondition",
	}, storage)
	if err != nil {
		return c, fmt.Errorf("kube-apiserver: %w", err)
	}
	c.stops = append(c.stops, api.TearDownFn)
	c.admin = rest.CopyConfig(api.ClientConfig)
	c.admin.QPS, c.admin.Burst = 200, 400
	if c.client, err = kubernetes.NewForConfig(c.admin); err != nil {
		return c, err
	}

	c.kubeconfig = filepath.Join(dir, "admin.kubeconfig")
	if err := writeKubeconfig(c.kubeconfig, c.admin); err != nil {
		return c, err
	}
	c.schedConfig = filepath.Join(dir, "scheduler.yaml")
	if err := os.WriteFile(c.schedConfig, fmt.Appendf(nil, schedulerConfig, c.kubeconfig, extenderURL), 0o600); err != nil {
		return c, err
	}
	stopSched, err := startScheduler(ctx, c.schedConfig, filepath.Join(dir, "scheduler"))
	if err != nil {
		return c, fmt.Errorf("kube-scheduler: %w", err)
	}
	c.stops = append(c.stops, stopSched)

	stopDC, err := startDisruptionController(ctx, c.admin)
	if err != nil {
		return c, fmt.Errorf("disruption controller: %w", err)
	}
	c.stops = append(c.stops, stopDC)
	return c, nil
}

// startEtcd starts an embedded single-member etcd on loopback and returns its
// client URL.
func startEtcd(dir string, verbose bool) (string, func(), error) {
	cfg := embed.NewConfig()
	cfg.Dir = dir
	cfg.Name = "gpuwatch-k8s"
	cfg.LogLevel = "fatal" // its shutdown logs "server closed" errors
	if verbose {
		cfg.LogLevel = "warn"
	}
	cfg.UnsafeNoFsync = true // a test's data: no need to survive a power cut
	ports, err := freePorts(2)
	if err != nil {
		return "", nil, err
	}
	client := url.URL{Scheme: "http", Host: fmt.Sprintf("127.0.0.1:%d", ports[0])}
	peer := url.URL{Scheme: "http", Host: fmt.Sprintf("127.0.0.1:%d", ports[1])}
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{client}, []url.URL{client}
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{peer}, []url.URL{peer}
	cfg.InitialCluster = cfg.Name + "=" + peer.String()
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return "", nil, fmt.Errorf("etcd: %w", err)
	}
	select {
	case <-e.Server.ReadyNotify():
	case <-time.After(60 * time.Second):
		e.Close()
		return "", nil, fmt.Errorf("etcd: not ready within 60 s")
	}
	return client.String(), e.Close, nil
}

// freePorts reserves n loopback ports and frees them for the caller.
func freePorts(n int) ([]int, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	var ports []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// writeKubeconfig writes cfg (server, CA, bearer token or client certificate)
// as a kubeconfig file.
func writeKubeconfig(path string, cfg *rest.Config) error {
	kc := clientcmdapi.NewConfig()
	kc.Clusters["test"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData,
		InsecureSkipTLSVerify: cfg.Insecure, TLSServerName: cfg.ServerName}
	kc.AuthInfos["test"] = &clientcmdapi.AuthInfo{Token: cfg.BearerToken,
		ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData}
	kc.Contexts["test"] = &clientcmdapi.Context{Cluster: "test", AuthInfo: "test"}
	kc.CurrentContext = "test"
	return clientcmd.WriteToFile(*kc, path)
}

// startScheduler runs the real kube-scheduler (the kube-scheduler command's
// Setup and Run, as cmd/kube-scheduler/app/testing does, which needs a
// *testing.T this TestMain does not have) with the configuration file.
func startScheduler(ctx context.Context, config, dir string) (func(), error) {
	ctx, cancel := context.WithCancel(ctx)
	// Its own registry of versions and feature gates, as the scheduler's test
	// server does: the default one is the API server's in this process.
	featureGate := utilfeature.DefaultMutableFeatureGate.DeepCopy()
	effective := utilcompatibility.DefaultKubeEffectiveVersionForTest()
	effective.SetEmulationVersion(featureGate.EmulationVersion())
	effective.SetMinCompatibilityVersion(featureGate.MinCompatibilityVersion())
	registry := basecompatibility.NewComponentGlobalsRegistry()
	if err := registry.Register(basecompatibility.DefaultKubeComponent, effective, featureGate); err != nil {
		cancel()
		return nil, err
	}
	opts := scheduleroptions.NewOptionsWithComponentGlobalsRegistry(registry)
	fs := pflag.NewFlagSet("kube-scheduler", pflag.ContinueOnError)
	for _, f := range opts.Flags.FlagSets {
		fs.AddFlagSet(f)
	}
	if err := fs.Parse([]string{"--config=" + config, "--authentication-skip-lookup"}); err != nil {
		cancel()
		return nil, err
	}
	if err := opts.ComponentGlobalsRegistry.Set(); err != nil {
		cancel()
		return nil, err
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		cancel()
		return nil, err
	}
	opts.SecureServing.Listener, opts.SecureServing.BindPort = l, l.Addr().(*net.TCPAddr).Port
	opts.SecureServing.ServerCert.CertDirectory = dir
	opts.Authorization.AlwaysAllowPaths = append(opts.Authorization.AlwaysAllowPaths, "/healthz")
	cc, sched, err := schedapp.Setup(ctx, opts)
	if err != nil {
		cancel()
		l.Close()
		return nil, err
	}
	// A scheduler registers its configuration in configz under one global
	// key, and refuses to run when the key is taken: a second scheduler in
	// this process (a test's own) takes it over.
	configz.Delete("componentconfig")
	done := make(chan error, 1)
	go func() { done <- schedapp.Run(ctx, cc, sched) }()
	// Run fails fast on a bad setup; it does not return while it serves.
	select {
	case err := <-done:
		cancel()
		return nil, fmt.Errorf("kube-scheduler stopped at start: %w", err)
	case <-time.After(time.Second):
	}
	return func() {
		cancel()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			log.Print("k8s harness: kube-scheduler did not stop within 30 s")
		}
	}, nil
}

// startDisruptionController runs the real disruption controller, which keeps
// PodDisruptionBudgets' status (disruptionsAllowed) that the Eviction API
// checks.
func startDisruptionController(ctx context.Context, admin *rest.Config) (func(), error) {
	ctx, cancel := context.WithCancel(ctx)
	client, err := kubernetes.NewForConfig(rest.AddUserAgent(admin, "disruption-controller"))
	if err != nil {
		cancel()
		return nil, err
	}
	inf := informers.NewSharedInformerFactory(client, 0)
	disc := memory.NewMemCacheClient(client.Discovery())
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(disc)
	scaleClient, err := scale.NewForConfig(admin, mapper, dynamic.LegacyAPIPathResolverFunc, scale.NewDiscoveryScaleKindResolver(client.Discovery()))
	if err != nil {
		cancel()
		return nil, err
	}
	dc := disruption.NewDisruptionController(ctx, inf.Core().V1().Pods(), inf.Policy().V1().PodDisruptionBudgets(),
		inf.Core().V1().ReplicationControllers(), inf.Apps().V1().ReplicaSets(), inf.Apps().V1().Deployments(),
		inf.Apps().V1().StatefulSets(), client, mapper, scaleClient, client.Discovery())
	inf.Start(ctx.Done())
	done := make(chan struct{})
	go func() { dc.Run(ctx, 2); close(done) }()
	return func() {
		cancel()
		inf.Shutdown() // the informers' watches end before the API server's teardown
		<-done
	}, nil
}

// mainTB is the ktesting.TB the API server's test starter gets in TestMain,
// where there is no *testing.T: it logs to stderr when verbose, fails by
// panicking (only during start-up), and runs its cleanups at the end.
type mainTB struct {
	verbose bool
	dir     string
	mu      sync.Mutex
	cleans  []func()
	failed  bool
	n       int
}

func (m *mainTB) Attr(string, string) {}
func (m *mainTB) Chdir(string)        { panic("k8s harness: Chdir in TestMain") }
func (m *mainTB) Cleanup(f func()) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.cleans = append(m.cleans, f)
}
func (m *mainTB) cleanup() {
	m.mu.Lock()
	c := m.cleans
	m.cleans = nil
	m.mu.Unlock()
	for i := len(c) - 1; i >= 0; i-- {
		c[i]()
	}
}
func (m *mainTB) Error(args ...any)                 { m.log(fmt.Sprint(args...)); m.Fail() }
func (m *mainTB) Errorf(format string, args ...any) { m.log(fmt.Sprintf(format, args...)); m.Fail() }
func (m *mainTB) Fail() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.failed = true
}
func (m *mainTB) FailNow() { m.Fail(); panic("k8s harness: control plane start-up failed") }
func (m *mainTB) Failed() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.failed
}
func (m *mainTB) Fatal(args ...any)                 { m.log(fmt.Sprint(args...)); m.FailNow() }
func (m *mainTB) Fatalf(format string, args ...any) { m.log(fmt.Sprintf(format, args...)); m.FailNow() }
func (m *mainTB) Helper()                           {}
func (m *mainTB) Log(args ...any)                   { m.log(fmt.Sprint(args...)) }
func (m *mainTB) Logf(format string, args ...any)   { m.log(fmt.Sprintf(format, args...)) }
func (m *mainTB) Name() string                      { return "TestMain" }
func (m *mainTB) Setenv(k, v string)                { os.Setenv(k, v) }
func (m *mainTB) Skip(args ...any)                  { m.FailNow() }
func (m *mainTB) Skipf(string, ...any)              { m.FailNow() }
func (m *mainTB) SkipNow()                          { m.FailNow() }
func (m *mainTB) Skipped() bool                     { return false }
func (m *mainTB) TempDir() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.n++
	d := filepath.Join(m.dir, fmt.Sprintf("tmp%d", m.n))
	if err := os.MkdirAll(d, 0o700); err != nil {
		panic(err)
	}
	return d
}

func (m *mainTB) log(s string) {
	if m.verbose {
		_, file, line, _ := runtime.Caller(2)
		fmt.Fprintf(os.Stderr, "%s:%d: %s\n", filepath.Base(file), line, s)
	}
}

var _ ktesting.TB = (*mainTB)(nil)

// front is a loopback listener whose address outlives the gpuwatch servers
// behind it: kube-scheduler's configuration names it once, and a test can stop
// gpuwatch (connections refused) and start another on the same address.
type front struct {
	addr string
}

func newFront() (*front, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	addr := l.Addr().String()
	l.Close()
	return &front{addr: addr}, nil
}

func (f *front) url() string { return "http://" + f.addr }

// listen takes the address for a server; the returned listener is the
// caller's to serve and close.
func (f *front) listen() (net.Listener, error) {
	var err error
	for range 50 { // the previous server's socket may linger a moment
		var l net.Listener
		if l, err = net.Listen("tcp", f.addr); err == nil {
			return l, nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return nil, fmt.Errorf("cannot listen on the extender's address %s again: %w", f.addr, err)
}
