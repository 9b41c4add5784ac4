package server

import (
	"context"
	"math"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/gpuwatch/gpuwatch/telemetry"
)

// SelfJob is the job label of the server's own series in its store.
const SelfJob = "gpuwatch-server"

// recordSelf writes the server's own metrics (/metrics: the drain controller,
// placement, fair share, ingest, the rules engine, the process) into its
// embedded store every interval, labelled job="gpuwatch-server" and
// instance=Options.Instance, as a Prometheus scraping it would. The rules the
// server evaluates over its store, and the dashboards, then see them without a
// separate scraper: the drain, placement and fair-share alerts fire from the
// embedded default.
func (s *Server) recordSelf(ctx context.Context, g prometheus.Gatherer, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		s.appendSelf(ctx, g)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (s *Server) appendSelf(ctx context.Context, g prometheus.Gatherer) {
	now := time.Now()
	if s.opts.Clock != nil {
		now = s.opts.Clock()
	}
	fams, err := g.Gather()
	if err != nil && len(fams) == 0 {
		s.opts.Logger.Warn("cannot gather the server's own metrics", "err", err)
		return
	}
	batch := selfSamples(fams, s.opts.Instance, now.Truncate(time.Millisecond))
	if err := s.embedded.Append(ctx, batch); err != nil && ctx.Err() == nil {
		s.opts.Logger.Warn("cannot store the server's own metrics", "samples", len(batch), "err", err)
	}
}

// selfSamples turns metric families into samples the way a scrape does:
// histograms into _bucket{le}, _sum and _count, summaries into their
// quantiles, _sum and _count.
func selfSamples(fams []*dto.MetricFamily, instance string, at time.Time) []telemetry.Sample {
	var out []telemetry.Sample
	for _, f := range fams {
		name := f.GetName()
		for _, m := range f.GetMetric() {
			kv := []string{"job", SelfJob, "instance", instance}
			for _, l := range m.GetLabel() {
				if l.GetName() == "job" || l.GetName() == "instance" {
					continue
				}
				kv = append(kv, l.GetName(), l.GetValue())
			}
			add := func(n string, v float64, extra ...string) {
				if math.IsNaN(v) {
					return
				}
				out = append(out, telemetry.Sample{Name: n, Labels: telemetry.NewLabels(append(append([]string{}, kv...), extra...)...), Value: v, Time: at})
			}
			switch f.GetType() {
			case dto.MetricType_COUNTER:
				add(name, m.GetCounter().GetValue())
			case dto.MetricType_GAUGE:
				add(name, m.GetGauge().GetValue())
			case dto.MetricType_UNTYPED:
				add(name, m.GetUntyped().GetValue())
			case dto.MetricType_HISTOGRAM:
				h := m.GetHistogram()
				for _, b := range h.GetBucket() {
					add(name+"_bucket", float64(b.GetCumulativeCount()), "le", formatLE(b.GetUpperBound()))
				}
				add(name+"_bucket", float64(h.GetSampleCount()), "le", "+Inf")
				add(name+"_sum", h.GetSampleSum())
				add(name+"_count", float64(h.GetSampleCount()))
			case dto.MetricType_SUMMARY:
				sm := m.GetSummary()
				for _, q := range sm.GetQuantile() {
					add(name, q.GetValue(), "quantile", strconv.FormatFloat(q.GetQuantile(), 'g', -1, 64))
				}
				add(name+"_sum", sm.GetSampleSum())
				add(name+"_count", float64(sm.GetSampleCount()))
			}
		}
	}
	return out
}

func formatLE(v float64) string {
	if math.IsInf(v, 1) {
		return "+Inf"
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}
