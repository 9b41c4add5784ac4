package collector

import (
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/pprof"
	"sort"
	"strings"
	"sync"
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
	mux.Handle("GET /metrics", fastGzip(promhttp.HandlerFor(joined{exp: opts.Exporter, proc: processGatherer()},
		promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError, EnableOpenMetrics: true, DisableCompression: true})))
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

// gzipWriters reuses compressors: one costs about 1 MB to set up.
var gzipWriters = sync.Pool{New: func() any {
	w, _ := gzip.NewWriterLevel(io.Discard, gzip.BestSpeed)
	return w
}}

type gzipResponse struct {
	http.ResponseWriter
	zw *gzip.Writer
}

func (g gzipResponse) Write(b []byte) (int, error) { return g.zw.Write(b) }

// fastGzip compresses responses at gzip.BestSpeed for clients that accept gzip
// (Prometheus always does). promhttp compresses at the default level, which on an
// HGX H100 node's 335 KB exposition costs 3.4 ms for 17.5 KB; BestSpeed takes about
// 1.1 ms for 19 KB, which keeps a scrape under the 5 ms goal (docs/BENCHMARKS.md).
func fastGzip(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !acceptsGzip(r.Header.Get("Accept-Encoding")) {
			h.ServeHTTP(w, r)
			return
		}
		zw := gzipWriters.Get().(*gzip.Writer)
		defer gzipWriters.Put(zw)
		zw.Reset(w)
		w.Header().Set("Content-Encoding", "gzip")
		w.Header().Add("Vary", "Accept-Encoding")
		h.ServeHTTP(gzipResponse{ResponseWriter: w, zw: zw}, r)
		_ = zw.Close()
	})
}

func acceptsGzip(header string) bool {
	for _, part := range strings.Split(header, ",") {
		enc, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		if strings.EqualFold(strings.TrimSpace(enc), "gzip") && strings.ReplaceAll(strings.TrimSpace(params), " ", "") != "q=0" {
			return true
		}
	}
	return false
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
	}
}
