package placement

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gpuwatch/gpuwatch/scheduler/framework"
	"github.com/gpuwatch/gpuwatch/telemetry"
)

type metrics struct {
	decisions *prometheus.CounterVec
	latency   *prometheus.HistogramVec
	leaves    prometheus.Histogram
	lca       *prometheus.CounterVec
	domains   prometheus.Histogram
	frag      prometheus.Histogram
	rail      prometheus.Histogram
	rejected  *prometheus.CounterVec
	expired   prometheus.Counter
	released  prometheus.Counter
	runs      prometheus.Counter
}

var (
	descReservations = prometheus.NewDesc("gpuwatch_placement_reservations",
		"Reservations the placement engine holds now.", nil, nil)
	descReservedGPUs = prometheus.NewDesc("gpuwatch_placement_reserved_gpus",
		"GPUs held by placement reservations (fractions count in part).", nil, nil)
	descSnapshotAge = prometheus.NewDesc("gpuwatch_placement_snapshot_age_seconds",
		"Age of the fleet snapshot placement decides on.", nil, nil)
)

func newMetrics(_ *Engine) *metrics {
	return &metrics{
		decisions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gpuwatch_placement_decisions_total",
			Help: "Placement decisions, by outcome (placed, unschedulable, invalid) and mode (dry_run, reserve).",
		}, []string{"outcome", "mode"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "gpuwatch_placement_latency_seconds",
			Help:    "Time to decide one placement, by mode.",
			Buckets: []float64{0.0001, 0.00025, 0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 1},
		}, []string{"mode"}),
		leaves: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "gpuwatch_placement_leaves_spanned",
			Help:    "Leaf switches spanned by each placed gang.",
			Buckets: []float64{1, 2, 3, 4, 6, 8, 12, 16, 32, 64},
		}),
		lca: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gpuwatch_placement_lca_tier_total",
			Help: "Placed gangs by the lowest topology tier all their nodes share.",
		}, []string{telemetry.LabelTier}),
		domains: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "gpuwatch_placement_nvlink_domains_spanned",
			Help:    "NVLink domains spanned by each placed gang (a node outside any counts as its own).",
			Buckets: []float64{1, 2, 3, 4, 8, 16, 32, 64},
		}),
		frag: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "gpuwatch_placement_fragmentation_left",
			Help:    "Free share of the chosen nodes' capacity after each placement.",
			Buckets: []float64{0, 0.05, 0.1, 0.25, 0.5, 0.75, 1},
		}),
		rail: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "gpuwatch_placement_rail_alignment",
			Help:    "Share of a placed gang's ranks on the same rail on every node.",
			Buckets: []float64{0, 0.25, 0.5, 0.75, 0.99, 1},
		}),
		rejected: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gpuwatch_placement_rejected_nodes_total",
			Help: "Candidate nodes rejected during placement, by the plugin that rejected them.",
		}, []string{"plugin"}),
		expired: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "gpuwatch_placement_reservations_expired_total",
			Help: "Reservations that ended by reaching their lease.",
		}),
		released: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "gpuwatch_placement_reservations_released_total",
			Help: "Reservations released by their holder.",
		}),
		runs: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "gpuwatch_placement_pipeline_runs_total",
			Help: "Nodes the filter, pick and score pipeline ran on; alike nodes share one run and remembered outcomes need none.",
		}),
	}
}

func (m *metrics) observe(d *framework.Decision, mode string, el time.Duration) {
	m.decisions.WithLabelValues(string(d.Outcome), mode).Inc()
	m.latency.WithLabelValues(mode).Observe(el.Seconds())
	if q := d.Quality; q != nil && d.Outcome == framework.OutcomePlaced {
		m.leaves.Observe(float64(q.LeavesSpanned))
		m.lca.WithLabelValues(q.LCATier.String()).Inc()
		m.domains.Observe(float64(q.NVLinkDomainsSpanned))
		m.frag.Observe(q.FragmentationLeft)
		m.rail.Observe(q.RailAlignment)
	}
}

func (m *metrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{m.decisions, m.latency, m.leaves, m.lca, m.domains, m.frag, m.rail, m.rejected, m.expired, m.released, m.runs}
}

// Describe implements prometheus.Collector.
func (e *Engine) Describe(ch chan<- *prometheus.Desc) {
	ch <- descReservations
	ch <- descReservedGPUs
	ch <- descSnapshotAge
	for _, c := range e.metrics.collectors() {
		c.Describe(ch)
	}
}

// Collect implements prometheus.Collector.
func (e *Engine) Collect(ch chan<- prometheus.Metric) {
	now := e.opts.Now()
	e.expire(now)
	e.mu.RLock()
	n := len(e.res)
	milli := 0
	for _, r := range e.res {
		for k, g := range r.GPUs {
			if r.flat[k] >= 0 {
				milli += g.Milli
			}
		}
	}
	age := now.Sub(e.snap.Now()).Seconds()
	e.mu.RUnlock()
	ch <- prometheus.MustNewConstMetric(descReservations, prometheus.GaugeValue, float64(n))
	ch <- prometheus.MustNewConstMetric(descReservedGPUs, prometheus.GaugeValue, float64(milli)/1000)
	ch <- prometheus.MustNewConstMetric(descSnapshotAge, prometheus.GaugeValue, max(0, age))
	for _, c := range e.metrics.collectors() {
		c.Collect(ch)
	}
}
