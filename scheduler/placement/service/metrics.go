package service

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gpuwatch/gpuwatch/scheduler/snapshot"
)

// metrics are the feeder's and the API's own series (the engine exports the
// decisions' quality itself).
type metrics struct {
	feedDuration prometheus.Gauge
	feedErrors   *prometheus.CounterVec
	lastSuccess  prometheus.Gauge
	nodes        prometheus.Gauge
	gpus         prometheus.Gauge
	stale        *prometheus.GaugeVec
	excluded     prometheus.Gauge
	stragglers   prometheus.Gauge
	requests     *prometheus.CounterVec
}

func newMetrics() *metrics {
	m := &metrics{
		feedDuration: prometheus.NewGauge(prometheus.GaugeOpts{Name: "gpuwatch_placement_feed_duration_seconds",
			Help: "How long the last snapshot read from the store took."}),
		feedErrors: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "gpuwatch_placement_feed_errors_total",
			Help: "Number of failed snapshot reads, by stage: store (the snapshot was not refreshed) or allocations (the scheduler's allocations were not read; the store's were used)."},
			[]string{"stage"}),
		lastSuccess: prometheus.NewGauge(prometheus.GaugeOpts{Name: "gpuwatch_placement_feed_last_success_timestamp_seconds",
			Help: "Unix time of the last snapshot built from the store."}),
		nodes: prometheus.NewGauge(prometheus.GaugeOpts{Name: "gpuwatch_placement_snapshot_nodes",
			Help: "Number of nodes in the placement snapshot."}),
		gpus: prometheus.NewGauge(prometheus.GaugeOpts{Name: "gpuwatch_placement_snapshot_gpus",
			Help: "Number of GPUs in the placement snapshot."}),
		stale: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "gpuwatch_placement_snapshot_stale_gpus",
			Help: "Number of GPUs of the placement snapshot whose value is stale (older than the staleness bound or never observed), by value: health or utilization."},
			[]string{"value"}),
		excluded: prometheus.NewGauge(prometheus.GaugeOpts{Name: "gpuwatch_placement_snapshot_excluded_gpus",
			Help: "Number of GPUs of the placement snapshot the drain controller excludes."}),
		stragglers: prometheus.NewGauge(prometheus.GaugeOpts{Name: "gpuwatch_placement_snapshot_straggler_gpus",
			Help: "Number of GPUs of the placement snapshot named stragglers within the straggler window (gpuwatch_straggler_gpu), which the straggler scorer avoids."}),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "gpuwatch_placement_api_requests_total",
			Help: "Number of placement API requests, by endpoint and HTTP status code."}, []string{"endpoint", "code"}),
	}
	return m
}

func (m *metrics) all() []prometheus.Collector {
	return []prometheus.Collector{m.feedDuration, m.feedErrors, m.lastSuccess, m.nodes, m.gpus, m.stale, m.excluded, m.stragglers, m.requests}
}

func (m *metrics) Describe(ch chan<- *prometheus.Desc) {
	for _, c := range m.all() {
		c.Describe(ch)
	}
}

func (m *metrics) Collect(ch chan<- prometheus.Metric) {
	for _, c := range m.all() {
		c.Collect(ch)
	}
}

func (m *metrics) observeSnapshot(snap *snapshot.Snapshot, at time.Time) {
	m.lastSuccess.Set(float64(at.UnixNano()) / 1e9)
	m.nodes.Set(float64(snap.Len()))
	m.gpus.Set(float64(snap.GPUCount()))
	h, l := snap.StaleGPUs()
	m.stale.WithLabelValues("health").Set(float64(h))
	m.stale.WithLabelValues("utilization").Set(float64(l))
	m.excluded.Set(float64(excludedGPUs(snap)))
	marked, _ := snap.StragglerGPUs()
	m.stragglers.Set(float64(marked))
}

func excludedGPUs(snap *snapshot.Snapshot) int {
	n := 0
	for _, node := range snap.Nodes() {
		for _, g := range node.GPUs {
			if g.Excluded {
				n++
			}
		}
	}
	return n
}
