package ingest

import (
	"hash/maphash"

	"github.com/prometheus/client_golang/prometheus"
)

type metrics struct {
	requests *prometheus.CounterVec
	accepted *prometheus.CounterVec
	rejected *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gpuwatch_ingest_requests_total",
			Help: "Ingest requests answered, by endpoint (remote_write, import_prometheus) and HTTP status code.",
		}, []string{"endpoint", "code"}),
		accepted: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gpuwatch_ingest_samples_accepted_total",
			Help: "Samples stored by the ingest endpoints, by endpoint.",
		}, []string{"endpoint"}),
		rejected: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gpuwatch_ingest_samples_rejected_total",
			Help: "Samples in refused ingest requests, by endpoint and reason (a limit name, malformed, invalid_series, unsupported or store).",
		}, []string{"endpoint", "reason"}),
	}
	if reg != nil {
		reg.MustRegister(m.requests, m.accepted, m.rejected)
	}
	return m
}

func newSeed() maphash.Seed { return maphash.MakeSeed() }
