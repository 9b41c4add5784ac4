package collector

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/pprof"
	"sort"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
)

// HandlerOptions configure the agent's HTTP endpoints.
type HandlerOptions struct {
	Runner   *Runner
	Exporter *Exporter
	// Topology returns the node's topology document for /topology (nil: 404).
	Topology func() any
	// Health returns the health report for /health (nil: 404).
	Health func() any
	// StaleAfter: /healthz answers 503 when the last snapshot is older than this.
	// Zero means three full intervals.
	StaleAfter time.Duration
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// processGatherer is the agent's own Go runtime and process metrics.
func processGatherer() prometheus.Gatherer {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return reg
}

// joined serves the exporter's rendered families followed by the process ones. The
// families come from two disjoint namespaces (DCGM_FI_/node_/gpuwatch_ and go_/process_),
// so they are merged without the per-scrape consistency checks prometheus.Gatherers
// runs: the exporter's output is checked once, in tests and with promtool.
type joined struct {
	exp  *Exporter
	proc prometheus.Gatherer
}

func (j joined) Gather() ([]*dto.MetricFamily, error) {
	own, _ := j.exp.Gather()
	proc, err := j.proc.Gather()
	out := make([]*dto.MetricFamily, 0, len(own)+len(proc))
	out = append(out, own...)
	out = append(out, proc...)
	sort.Slice(out, func(a, b int) bool { return out[a].GetName() < out[b].GetName() })
	return out, err
}

// NewHandler serves /metrics, /healthz, /health, /topology, /sources and
// /debug/pprof/. None of them touches the hardware: they read the last snapshot.
func NewHandler(opts HandlerOptions) http.Handler {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.StaleAfter <= 0 && opts.Runner != nil {
		opts.StaleAfter = 3 * opts.Runner.opts.Interval
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(joined{exp: opts.Exporter, proc: processGatherer()},
		promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError, EnableOpenMetrics: true}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		snap := opts.Runner.Snapshot()
		switch {
		case snap == nil:
			http.Error(w, "no collection has finished yet", http.StatusServiceUnavailable)
		case opts.Now().Sub(snap.Time) > opts.StaleAfter:
			http.Error(w, fmt.Sprintf("last collection finished %s ago, more than %s",
				opts.Now().Sub(snap.Time).Round(time.Second), opts.StaleAfter), http.StatusServiceUnavailable)
		default:
			fmt.Fprintln(w, "ok")
		}
	})
	mux.HandleFunc("GET /sources", func(w http.ResponseWriter, r *http.Request) {
		snap := opts.Runner.Snapshot()
		if snap == nil {
			writeJSON(w, []SourceStatus{})
			return
		}
		writeJSON(w, snap.Sources)
	})
	if opts.Health != nil {
		mux.HandleFunc("GET /health", func(w http.ResponseWriter, r *http.Request) { writeJSON(w, opts.Health()) })
	}
	if opts.Topology != nil {
		mux.HandleFunc("GET /topology", func(w http.ResponseWriter, r *http.Request) {
			t := opts.Topology()
			if t == nil {
				http.Error(w, "topology not discovered yet", http.StatusServiceUnavailable)
				return
			}
			writeJSON(w, t)
		})
	}
	mux.HandleFunc("GET /debug/pprof/", pprof.Index)
	mux.HandleFunc("GET /debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("GET /debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("GET /debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("GET /debug/pprof/trace", pprof.Trace)
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, `<html><head><title>gpuwatch agent</title></head><body><h1>gpuwatch agent</h1><ul>
<li><a href="/metrics">/metrics</a> Prometheus metrics (dcgm-exporter names)</li>
<li><a href="/health">/health</a> GPU health conditions (JSON)</li>
<li><a href="/topology">/topology</a> node topology (JSON)</li>
<li><a href="/sources">/sources</a> per-source status (JSON)</li>
<li><a href="/healthz">/healthz</a> liveness</li>
<li><a href="/debug/pprof/">/debug/pprof/</a></li></ul></body></html>`)
	})
	return mux
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
	}
}
