package fairshare

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

// TestCollector exports the scenario of TestStanding, scraped 90 s after the
// ledger's last input: Fair Tree factors 1/3, 2/3, 1; normalized shares 0.6 ×
// 1/2 and 0.4; measured and allocated GPU-seconds as derived there, dave's
// unattributed usage included.
func TestCollector(t *testing.T) {
	tree, l, through := scenario(t)
	u, err := l.Usage(through)
	if err != nil {
		t.Fatal(err)
	}
	c := NewCollector(func() time.Time { return through.Add(90 * time.Second) })
	if n := testutil.CollectAndCount(c); n != 0 {
		t.Errorf("%d series before the first standing, want 0", n)
	}
	c.Update(NewStanding(tree, u, nil, StandingOptions{}))
	const want = `
# HELP gpuwatch_fairshare_factor Fair-share factor (0..1, higher is more deserving) of a user association under the configured algorithm.
# TYPE gpuwatch_fairshare_factor gauge
gpuwatch_fairshare_factor{account="bio",user="carol"} 1
gpuwatch_fairshare_factor{account="ml",user="alice"} 0.3333333333333333
gpuwatch_fairshare_factor{account="ml",user="bob"} 0.6666666666666666
# HELP gpuwatch_fairshare_fallback 1 when the fair-share standing is allocation-based because the ledger was stale, else 0.
# TYPE gpuwatch_fairshare_fallback gauge
gpuwatch_fairshare_fallback 0
# HELP gpuwatch_fairshare_ledger_age_seconds Seconds since the fair-share ledger's newest input (+Inf before any input).
# TYPE gpuwatch_fairshare_ledger_age_seconds gauge
gpuwatch_fairshare_ledger_age_seconds 90
# HELP gpuwatch_fairshare_shares_normalized Normalized shares of a user association: its fraction of the whole machine (product of share fractions down the account tree).
# TYPE gpuwatch_fairshare_shares_normalized gauge
gpuwatch_fairshare_shares_normalized{account="bio",user="carol"} 0.4
gpuwatch_fairshare_shares_normalized{account="ml",user="alice"} 0.3
gpuwatch_fairshare_shares_normalized{account="ml",user="bob"} 0.3
# HELP gpuwatch_fairshare_usage_gpu_seconds Decayed GPU-seconds of a user association: charge="measured" is max(activity, idle floor) per allocated GPU-second, charge="allocation" is 1 per allocated GPU-second.
# TYPE gpuwatch_fairshare_usage_gpu_seconds gauge
gpuwatch_fairshare_usage_gpu_seconds{account="bio",charge="allocation",user="carol"} 2700
gpuwatch_fairshare_usage_gpu_seconds{account="bio",charge="measured",user="carol"} 2250
gpuwatch_fairshare_usage_gpu_seconds{account="ml",charge="allocation",user="alice"} 7200
gpuwatch_fairshare_usage_gpu_seconds{account="ml",charge="allocation",user="bob"} 3600
gpuwatch_fairshare_usage_gpu_seconds{account="ml",charge="allocation",user="dave"} 600
gpuwatch_fairshare_usage_gpu_seconds{account="ml",charge="measured",user="alice"} 5400
gpuwatch_fairshare_usage_gpu_seconds{account="ml",charge="measured",user="bob"} 450
gpuwatch_fairshare_usage_gpu_seconds{account="ml",charge="measured",user="dave"} 300
`
	if err := testutil.CollectAndCompare(c, strings.NewReader(want)); err != nil {
		t.Error(err)
	}
	problems, err := testutil.CollectAndLint(c)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("lint %s: %s", p.Metric, p.Text)
	}
}

// TestCollectorClassicAndStale: the classic algorithm exports classic factors
// (alice 2^(-125/54), derived in TestStanding), a stale fallback sets
// gpuwatch_fairshare_fallback, and a ledger that never had input is +Inf old.
func TestCollectorClassicAndStale(t *testing.T) {
	tree, l, through := scenario(t)
	now := through.Add(10 * time.Minute)
	u, err := l.Usage(now)
	s := NewStanding(tree, AllocationFallback(u), err, StandingOptions{Algorithm: Classic})
	c := NewCollector(func() time.Time { return now })
	c.Update(s)
	const want = `
# HELP gpuwatch_fairshare_fallback 1 when the fair-share standing is allocation-based because the ledger was stale, else 0.
# TYPE gpuwatch_fairshare_fallback gauge
gpuwatch_fairshare_fallback 1
# HELP gpuwatch_fairshare_ledger_age_seconds Seconds since the fair-share ledger's newest input (+Inf before any input).
# TYPE gpuwatch_fairshare_ledger_age_seconds gauge
gpuwatch_fairshare_ledger_age_seconds 600
`
	if err := testutil.CollectAndCompare(c, strings.NewReader(want), "gpuwatch_fairshare_fallback", "gpuwatch_fairshare_ledger_age_seconds"); err != nil {
		t.Error(err)
	}
	// Under allocation fallback: alice 7200, bob 3600, carol 2700 (all decayed
	// alike, which cancels): alice UA 7200/13500, ml 10800/13500 = 0.8,
	// UE = 0.5333 + (0.8 - 0.5333)/2 = 0.6667, S 0.3: 2^(-20/9).
	for _, r := range s.Associations {
		if r.User == "alice" && !near(s.Factor(r), math.Exp2(-20.0/9), 1e-12) {
			t.Errorf("alice classic under fallback: %v, want %v", s.Factor(r), math.Exp2(-20.0/9))
		}
	}
	empty, _ := NewLedger(LedgerOptions{Policy: Policy{Charge: ChargeMeasured}})
	eu, eerr := empty.Usage(now)
	c.Update(NewStanding(tree, AllocationFallback(eu), eerr, StandingOptions{}))
	const never = `
# HELP gpuwatch_fairshare_ledger_age_seconds Seconds since the fair-share ledger's newest input (+Inf before any input).
# TYPE gpuwatch_fairshare_ledger_age_seconds gauge
gpuwatch_fairshare_ledger_age_seconds +Inf
`
	if err := testutil.CollectAndCompare(c, strings.NewReader(never), "gpuwatch_fairshare_ledger_age_seconds"); err != nil {
		t.Error(err)
	}
}

func testutilCount(c *Collector) int { return testutil.CollectAndCount(c) }
