package fairshare

import (
	"math"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gpuwatch/gpuwatch/telemetry"
)

var (
	descFactor = prometheus.NewDesc("gpuwatch_fairshare_factor",
		"Fair-share factor (0..1, higher is more deserving) of a user association under the configured algorithm.",
		[]string{telemetry.LabelAccount, telemetry.LabelUser}, nil)
	descUsage = prometheus.NewDesc("gpuwatch_fairshare_usage_gpu_seconds",
		"Decayed GPU-seconds of a user association: charge=\"measured\" is max(activity, idle floor) per allocated GPU-second, charge=\"allocation\" is 1 per allocated GPU-second.",
		[]string{telemetry.LabelAccount, telemetry.LabelUser, "charge"}, nil)
	descShares = prometheus.NewDesc("gpuwatch_fairshare_shares_normalized",
		"Normalized shares of a user association: its fraction of the whole machine (product of share fractions down the account tree).",
		[]string{telemetry.LabelAccount, telemetry.LabelUser}, nil)
	descAge = prometheus.NewDesc("gpuwatch_fairshare_ledger_age_seconds",
		"Seconds since the fair-share ledger's newest input (+Inf before any input).",
		nil, nil)
	descFallback = prometheus.NewDesc("gpuwatch_fairshare_fallback",
		"1 when the fair-share standing is allocation-based because the ledger was stale, else 0.",
		nil, nil)
)

// Collector exports the latest Standing as gpuwatch_fairshare_* series. The
// standing is computed elsewhere and handed over with Update; a scrape only
// reads it. Series are per user association: account aggregates follow from
// the tree, which labels cannot carry. Unattributed usage is exported too.
type Collector struct {
	now func() time.Time

	mu sync.RWMutex
	s  *Standing
}

// NewCollector returns a collector with no standing; now is the clock for the
// ledger age (nil means time.Now).
func NewCollector(now func() time.Time) *Collector {
	if now == nil {
		now = time.Now
	}
	return &Collector{now: now}
}

// Update replaces the exported standing; s must not be modified afterwards.
func (c *Collector) Update(s *Standing) {
	c.mu.Lock()
	c.s = s
	c.mu.Unlock()
}

// Describe implements prometheus.Collector.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descFactor, descUsage, descShares, descAge, descFallback} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	c.mu.RLock()
	s := c.s
	c.mu.RUnlock()
	if s == nil {
		return
	}
	age := math.Inf(1)
	if !s.LastInput.IsZero() {
		age = c.now().Sub(s.LastInput).Seconds()
	}
	ch <- prometheus.MustNewConstMetric(descAge, prometheus.GaugeValue, age)
	fb := 0.0
	if s.Fallback {
		fb = 1
	}
	ch <- prometheus.MustNewConstMetric(descFallback, prometheus.GaugeValue, fb)
	for _, r := range s.Associations {
		if r.User == "" {
			continue
		}
		if f := s.Factor(r); !math.IsNaN(f) {
			ch <- prometheus.MustNewConstMetric(descFactor, prometheus.GaugeValue, f, r.Account, r.User)
		}
		ch <- prometheus.MustNewConstMetric(descShares, prometheus.GaugeValue, r.SharesNormalized, r.Account, r.User)
		ch <- prometheus.MustNewConstMetric(descUsage, prometheus.GaugeValue, r.UsageMeasured, r.Account, r.User, "measured")
		ch <- prometheus.MustNewConstMetric(descUsage, prometheus.GaugeValue, r.UsageAllocated, r.Account, r.User, "allocation")
	}
	for _, u := range s.Unattributed {
		if u.User == "" {
			continue
		}
		ch <- prometheus.MustNewConstMetric(descUsage, prometheus.GaugeValue, u.Measured, u.Account, u.User, "measured")
		ch <- prometheus.MustNewConstMetric(descUsage, prometheus.GaugeValue, u.Allocated, u.Account, u.User, "allocation")
	}
}
