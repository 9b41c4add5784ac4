package server

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gpuwatch/gpuwatch/analyzer/report"
	"github.com/gpuwatch/gpuwatch/telemetry/store"
	"github.com/gpuwatch/gpuwatch/telemetry/store/embedded"
	"github.com/gpuwatch/gpuwatch/telemetry/store/remote"
)

// downsampleEvery is how often the server looks for intervals to summarize.
const downsampleEvery = 30 * time.Second

// downsampler keeps the report's summaries in the store (analyzer/report's
// Downsampler) and says what each interval cost on /metrics.
type downsampler struct {
	d         *report.Downsampler
	durations *prometheus.HistogramVec
	samples   *prometheus.CounterVec
	errors    prometheus.Counter
}

// startDownsampler builds the downsampler over the store: the embedded
// store's appender, or remote write to the external store.
func (s *Server) startDownsampler(reg prometheus.Registerer) error {
	do := s.opts.Downsample
	if do == nil {
		return nil
	}
	o := *do
	if o.Now == nil && s.opts.Clock != nil {
		o.Now = s.opts.Clock
	}
	if o.Logger == nil {
		o.Logger = s.opts.Logger.With("component", "downsample")
	}
	var app store.Appender
	if s.embedded != nil {
		app = s.embedded
		// The embedded store takes samples this far behind its newest one
		// (without its out-of-order window, about its head's last hour).
		win := s.opts.OutOfOrderWindow
		switch {
		case win == 0:
			win = embedded.DefaultOutOfOrderWindow
		case win < 0:
			win = 45 * time.Minute
		}
		// Less the start delay, the delay and an interval: the oldest
		// catch-up interval is that much older when it is written.
		if o.CatchUp == 0 {
			o.CatchUp = max(win-30*time.Minute, 15*time.Minute)
		}
	} else {
		u := s.opts.StoreWriteURL
		if u == "" {
			u = strings.TrimRight(s.opts.StoreURL, "/") + remote.WritePath
		}
		w, err := remote.NewWriter(u, remote.Options{})
		if err != nil {
			return fmt.Errorf("--store.write-url: %w", err)
		}
		app = w
	}
	d, err := report.NewDownsampler(s.querier, app, o)
	if err != nil {
		return err
	}
	ds := &downsampler{d: d,
		durations: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "gpuwatch_report_downsample_duration_seconds",
			Help:    "Time to summarize one interval for the utilization report (read its samples or summaries, write its summaries), by resolution.",
			Buckets: prometheus.ExponentialBuckets(0.005, 2, 14)}, []string{"resolution"}),
		samples: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "gpuwatch_report_downsample_samples_total",
			Help: "Summary samples the server wrote into its store for the utilization report, by resolution."}, []string{"resolution"}),
		errors: prometheus.NewCounter(prometheus.CounterOpts{Name: "gpuwatch_report_downsample_errors_total",
			Help: "Steps of the report's downsampler that failed (the report reads raw samples where summaries are missing)."}),
	}
	reg.MustRegister(ds.durations, ds.samples, ds.errors)
	s.downsample = ds
	return nil
}

func (ds *downsampler) run(ctx context.Context) {
	ds.d.Run(ctx, downsampleEvery, func(st report.IntervalStats, err error) {
		if err != nil {
			ds.errors.Inc()
			return
		}
		res := st.ResolutionLabel()
		ds.durations.WithLabelValues(res).Observe(st.Took.Seconds())
		ds.samples.WithLabelValues(res).Add(float64(st.Samples))
	})
}
