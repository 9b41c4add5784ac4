package demo

import (
	"bufio"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/prometheus/common/model"

	"github.com/gpuwatch/gpuwatch/internal/auth"
	"github.com/gpuwatch/gpuwatch/internal/server"
	"github.com/gpuwatch/gpuwatch/scheduler/drain"
	"github.com/gpuwatch/gpuwatch/scheduler/fairshare"
	"github.com/gpuwatch/gpuwatch/telemetry/store/ingest"
)

// DefaultServerListen is where the demo serves its gpuwatch server when
// Options.ServerListen is "": the port `gpuwatch server` listens on, on loopback,
// so a Grafana data source added once keeps working from run to run. When the
// port is taken (a real gpuwatch server, a second demo) a free one is used.
const DefaultServerListen = "127.0.0.1:9402"

// storeDirName is the store's directory under the demo's working directory.
const storeDirName = "store"

// demoServer is the in-process `gpuwatch server` the agents remote-write to: the
// embedded Prometheus TSDB in the demo's working directory, its ingest endpoints
// and the Prometheus query API Grafana reads.
type demoServer struct {
	srv    *server.Server
	http   *http.Server
	url    string // http://127.0.0.1:PORT
	dir    string
	note   string // why the address is not the one asked for, or ""
	client *http.Client
	push   *pushRecorder
	tokens *demoTokens
	alerts *alertLog

	cancel context.CancelFunc // of the control loops (drain worker, fair-share feeder)
	done   chan struct{}
}

// Serving is where the demo's server serves, for Options.Serving.
type Serving struct {
	// URL is the server's base URL: a Grafana Prometheus data source's URL.
	URL string
	// GrafanaTokenFile holds the secret of the read-only token Grafana sends
	// (Authorization: Bearer <secret>).
	GrafanaTokenFile string
	// Start is the simulated time the fleet starts at.
	Start time.Time
	// Done is nil while the story runs, and the finished run's result when the
	// run is over and the server is kept serving.
	Done *Result
}

// control is what the demo's server runs besides the store: the drain controller
// and fair share, on the simulated clock.
type control struct {
	now       func() time.Time
	policy    *drain.Policy
	act       *actuator
	workloads func(node string, gpus []string) []string
	fairShare *fairshare.Config
	// fairShareEvery is the feeder's interval on the wall clock: a minute of
	// simulated time at the run's speed.
	fairShareEvery time.Duration
}

// startServer opens a fresh store in dir/store (a previous run's data there is
// removed: each run is a fresh fleet whose times would overlap it), with the drain
// controller and fair share keeping their state beside it, and serves it on
// loopback. The control loops start with run.
func startServer(o Options, dir string, nodes []string, c control) (*demoServer, error) {
	sdir := filepath.Join(dir, storeDirName)
	if err := os.RemoveAll(sdir); err != nil {
		return nil, fmt.Errorf("cannot clear the store's directory %s: %w", sdir, err)
	}
	tokens, err := makeTokens(dir, nodes)
	if err != nil {
		return nil, err
	}
	tf, err := auth.OpenTokenFile(tokens.file, nil)
	if err != nil {
		return nil, err
	}
	lim := ingest.DefaultLimits()
	// Simulated time at more than 1x outruns the wall clock; the demo's store takes
	// the agents' clock as it is.
	lim.MaxFutureSkew = 0
	alog := &alertLog{}
	instance := o.ServerListen
	if instance == "" {
		instance = DefaultServerListen
	}
	srv, err := server.New(server.Options{DataDir: sdir, Limits: lim, Version: o.Version, Clock: c.now, Auth: auth.Options{Tokens: tf}, Instance: instance,
		// The server's own rule evaluation, every 15 s of simulated time; the
		// demo prints each alert as it fires and resolves.
		Rules:     &server.RulesOptions{Builtin: true, Files: o.Rules, Interval: wallEvery(15*time.Second, o.Speed), OnAlert: alog.add},
		FairShare: c.fairShare, FairShareInterval: c.fairShareEvery,
		Drain: &server.DrainOptions{Policy: c.policy, Actuator: c.act, ActuatorName: c.act.kind(), Workloads: c.workloads,
			// The worker looks for due actions (probation ends, retries) often
			// enough for simulated time at any speed.
			PollInterval: 5 * time.Millisecond, CallTimeout: 30 * time.Second},
		// The demo refreshes the snapshot itself before placing its workload (in
		// step with simulated time); the service's own loop keeps it fresh for the
		// HTTP API (gpuwatch place --server) every simulated minute.
		Placement: &server.PlacementOptions{Interval: wallEvery(time.Minute, o.Speed)}})
	if err != nil {
		return nil, fmt.Errorf("cannot start the demo's gpuwatch server: %w", err)
	}
	addr, note := o.ServerListen, ""
	if addr == "" {
		addr = DefaultServerListen
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil && o.ServerListen == "" && errors.Is(err, syscall.EADDRINUSE) {
		note = DefaultServerListen + " is taken"
		ln, err = net.Listen("tcp", "127.0.0.1:0")
	}
	if err != nil {
		_ = srv.Close(context.Background())
		return nil, fmt.Errorf("--server-listen %q: cannot serve the demo's gpuwatch server: %w", addr, err)
	}
	push := newPushRecorder(srv.Handler(), c.now)
	ds := &demoServer{srv: srv, url: "http://" + ln.Addr().String(), dir: sdir, note: note, push: push, tokens: tokens, alerts: alog,
		http:   &http.Server{Handler: push, ReadHeaderTimeout: 10 * time.Second},
		client: &http.Client{Timeout: 10 * time.Second, Transport: tokens.transport(tokenAdmin)}}
	go ds.http.Serve(ln)
	return ds, nil
}

// run starts the server's control loops: the drain controller's worker, which
// actuates what the controller decided, and the fair-share feeder, which reads
// the store into the ledger every interval (and once at once).
func (ds *demoServer) run() {
	ctx, cancel := context.WithCancel(context.Background())
	ds.cancel, ds.done = cancel, make(chan struct{})
	go func() { defer close(ds.done); ds.srv.Run(ctx) }()
}

// halt stops the control loops and waits for them.
func (ds *demoServer) halt() {
	if ds.cancel != nil {
		ds.cancel()
		<-ds.done
		ds.cancel = nil
	}
}

// writeURL is the remote-write endpoint the agents ship to.
func (ds *demoServer) writeURL() string { return ds.url + ingest.WritePath }

// stop ends the control loops, closes the HTTP server and then the store
// (flushing its head to the WAL) and the drain controller.
func (ds *demoServer) stop() {
	ds.halt()
	_ = ds.http.Close()
	_ = ds.srv.Close(context.Background())
}

// StoreResult is what the demo's store held at the end, read back from it.
type StoreResult struct {
	// URL is the server's base URL: a Grafana Prometheus data source's URL.
	URL string
	// Dir is the embedded store's data directory.
	Dir string
	// Series is the store's series in memory (prometheus_tsdb_head_series), and
	// Accepted and Rejected the samples its remote-write endpoint took and refused
	// (gpuwatch_ingest_samples_*_total), all read from the server's /metrics.
	Series             int
	Accepted, Rejected int
	// Sent and Dropped are the samples the agents' shippers delivered and dropped.
	Sent, Dropped int
	// Answers are PromQL queries evaluated by the store at the end of the run.
	Answers []Answer
}

// Answer is one PromQL query and the store's answer: the value of its single
// sample (NaN when the answer was empty).
type Answer struct {
	Expr  string
	Value float64
}

// Answer returns the value the store gave expr, NaN when it was not asked.
func (r StoreResult) Answer(expr string) float64 {
	for _, a := range r.Answers {
		if a.Expr == expr {
			return a.Value
		}
	}
	return math.NaN()
}

// The queries the final summary asks the store.
const (
	queryGPUs = "count(DCGM_FI_DEV_GPU_TEMP)"
	queryXids = "sum(gpuwatch_xid_errors_total)"
	// queryAttributed counts the GPUs the agents attributed to a job of an
	// account: what fair share charges.
	queryAttributed = `count(gpuwatch_gpu_allocation_info{account!=""})`
)

// queryHealthSamples counts the samples of the nodes' health state over the run:
// one per node and agent cycle when the store holds every cycle's.
func queryHealthSamples(simulated time.Duration) string {
	return fmt.Sprintf("sum(count_over_time(gpuwatch_node_health_state[%s]))", model.Duration(simulated.Round(time.Second)+time.Second))
}

// summary reads back what the store holds at simulated time at: the server's own
// counters over HTTP and PromQL answers through the server's Querier.
func (ds *demoServer) summary(ctx context.Context, at time.Time, simulated time.Duration, fa *fleetAgents) (StoreResult, error) {
	r := StoreResult{URL: ds.url, Dir: ds.dir, Sent: fa.retiredSent, Dropped: fa.retiredDropped}
	for _, na := range fa.up() {
		if sh := na.a.Shipper; sh != nil {
			st := sh.Stats()
			r.Sent += int(st.SamplesSent)
			for _, n := range st.Dropped {
				r.Dropped += int(n)
			}
		}
	}
	m, err := ds.metrics()
	if err != nil {
		return r, err
	}
	r.Series = int(m["prometheus_tsdb_head_series"])
	r.Accepted = int(m["gpuwatch_ingest_samples_accepted_total"])
	r.Rejected = int(m["gpuwatch_ingest_samples_rejected_total"])
	q := ds.srv.Querier()
	for _, expr := range []string{queryGPUs, queryXids, queryAttributed, queryHealthSamples(simulated)} {
		v, err := q.Instant(ctx, expr, at)
		if err != nil {
			return r, fmt.Errorf("the demo's store cannot answer %s: %w", expr, err)
		}
		a := Answer{Expr: expr, Value: math.NaN()}
		if len(v) == 1 {
			a.Value = v[0].Value
		}
		r.Answers = append(r.Answers, a)
	}
	return r, nil
}

// metrics reads the server's /metrics over HTTP and sums each metric's series by
// name (the counters of every label combination together).
func (ds *demoServer) metrics() (map[string]float64, error) {
	resp, err := ds.client.Get(ds.url + "/metrics")
	if err != nil {
		return nil, fmt.Errorf("the demo's gpuwatch server: GET /metrics: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, resp.Body)
		return nil, fmt.Errorf("the demo's gpuwatch server: GET %s/metrics: %s", ds.url, resp.Status)
	}
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		l := sc.Text()
		if l == "" || l[0] == '#' {
			continue
		}
		name, rest, _ := strings.Cut(l, " ")
		if i := strings.IndexByte(name, '{'); i >= 0 {
			name = name[:i]
			if j := strings.LastIndexByte(l, '}'); j >= 0 {
				rest = strings.TrimSpace(l[j+1:])
			}
		}
		val, _, _ := strings.Cut(rest, " ")
		if v, err := strconv.ParseFloat(val, 64); err == nil {
			out[name] += v
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("the demo's gpuwatch server: reading /metrics: %w", err)
	}
	return out, nil
}

// alertLog collects the server's alert transitions for the live output.
type alertLog struct {
	mu     sync.Mutex
	events []server.AlertEvent
	fired  int
}

func (l *alertLog) add(e server.AlertEvent) {
	if e.Name == "GpuwatchWatchdog" {
		return // always firing, for a dead-man's switch: not part of the story
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = append(l.events, e)
	if e.State == "firing" {
		l.fired++
	}
}

// take returns the transitions since the last call as lines of the story.
func (l *alertLog) take() []ctlLine {
	l.mu.Lock()
	evs := l.events
	l.events = nil
	l.mu.Unlock()
	out := make([]ctlLine, 0, len(evs))
	for _, e := range evs {
		node := cmp.Or(e.Labels["node"], e.Labels["Hostname"], e.Labels["hostname"], "fleet")
		text := fmt.Sprintf("alert %s [%s]", e.Name, e.Labels["severity"])
		if e.State == "firing" {
			if s := e.Annotations["summary"]; s != "" {
				text += ": " + s
			}
		} else {
			text += " resolved"
		}
		out = append(out, ctlLine{at: e.At, node: node, text: text})
	}
	return out
}

// Fired is how many alerts fired during the run.
func (l *alertLog) Fired() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.fired
}
