package fairshare

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite golden files in testdata")

// scenario is a small site after one hour, every sample ending at through so
// nothing has decayed (idle floor 0.125):
//
//	ml (60):  alice 2 GPUs × 3600 s at SM 0.75: allocated 7200, measured 5400
//	          bob   1 GPU  × 3600 s idle:       allocated 3600, measured 450 (floor)
//	bio (40): carol quarter MIG × 3600 s at NVML 50%: allocated 900, measured 450
//	          carol 1 GPU × 1800 s unmeasured:  allocated 1800, measured 1800
//	dave (not in the tree, account ml): 600 s at 0.5: allocated 600, measured 300
func scenario(t *testing.T) (*Tree, *Ledger, time.Time) {
	t.Helper()
	tree, err := NewTree(TreeSpec{Accounts: []AccountSpec{
		{Name: "ml", Shares: 60, Users: []UserSpec{{"alice", 1}, {"bob", 1}}},
		{Name: "bio", Shares: 40, Users: []UserSpec{{"carol", 1}}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	l := newTestLedger(t, LedgerOptions{Policy: Policy{Charge: ChargeMeasured, IdleFloor: 0.125}})
	mig := sample("102", "bio", "carol", "GPU-c0", 0, time.Hour, SourceNVMLGPUUtil, 50)
	mig.Slice, mig.Fraction = "MIG-c0-1", 0.25
	batch := []Sample{
		sample("100", "ml", "alice", "GPU-a0", 0, time.Hour, SourceDCGMSMActive, 0.75),
		sample("100", "ml", "alice", "GPU-a1", 0, time.Hour, SourceDCGMSMActive, 0.75),
		sample("101", "ml", "bob", "GPU-b0", 0, time.Hour, SourceDCGMSMActive, 0),
		mig,
		sample("103", "bio", "carol", "GPU-c1", 30*time.Minute, 30*time.Minute, SourceNone, 0),
		sample("104", "ml", "dave", "GPU-d0", 50*time.Minute, 10*time.Minute, SourceDCGMSMActive, 0.5),
	}
	through := t0.Add(time.Hour)
	if _, err := l.Record(through, batch); err != nil {
		t.Fatal(err)
	}
	return tree, l, through
}

// TestStanding checks the scenario's numbers, each derived by hand. Charged
// (measured): alice 5400, bob 450, carol 2250; tree total 8100; ml 5850
// (13/18), bio 2250 (5/18).
//
// Classic: ml 2^(-(13/18)/0.6) = 2^(-65/54); alice UA 2/3, UE 2/3 + (13/18 -
// 2/3)/2 = 25/36, S 0.3: 2^(-125/54); bob UA 1/18, UE 1/18 + (13/18 - 1/18)/2 =
// 7/18: 2^(-35/27); carol UE 5/18, S 0.4: 2^(-25/36).
//
// Fair Tree: LF(bio) = 0.4/(5/18) = 1.44 > LF(ml) = 0.6/(13/18) = 0.8308, so
// carol ranks 3 (1.0); in ml bob 0.5/(450/5850) = 6.5 > alice 0.5/(5400/5850)
// = 0.5417: bob 2 (2/3), alice 1 (1/3).
func TestStanding(t *testing.T) {
	tree, l, through := scenario(t)
	u, err := l.Usage(through)
	if err != nil {
		t.Fatal(err)
	}
	s := NewStanding(tree, u, nil, StandingOptions{})
	want := map[Assoc]struct {
		measured, allocated, classic, fairTree float64
		fallback                               bool
	}{
		{Account: "ml"}:                 {5850, 10800, math.Exp2(-65.0 / 54), math.NaN(), false},
		{Account: "ml", User: "alice"}:  {5400, 7200, math.Exp2(-125.0 / 54), 1.0 / 3, false},
		{Account: "ml", User: "bob"}:    {450, 3600, math.Exp2(-35.0 / 27), 2.0 / 3, false},
		{Account: "bio"}:                {2250, 2700, math.Exp2(-25.0 / 36), math.NaN(), true},
		{Account: "bio", User: "carol"}: {2250, 2700, math.Exp2(-25.0 / 36), 1, true},
	}
	seen := 0
	for _, r := range s.Associations {
		w, ok := want[Assoc{Account: r.Account, User: r.User}]
		if !ok {
			continue
		}
		seen++
		if !near(r.UsageMeasured, w.measured, 1e-9) || !near(r.UsageAllocated, w.allocated, 1e-9) {
			t.Errorf("%s/%s: measured %v allocated %v, want %v and %v", r.Account, r.User, r.UsageMeasured, r.UsageAllocated, w.measured, w.allocated)
		}
		if !near(float64(r.ClassicFactor), w.classic, 1e-12) {
			t.Errorf("%s/%s: classic %v, want %v", r.Account, r.User, r.ClassicFactor, w.classic)
		}
		if ft := float64(r.FairTreeFactor); !(math.IsNaN(w.fairTree) && math.IsNaN(ft)) && !near(ft, w.fairTree, 1e-15) {
			t.Errorf("%s/%s: fair tree %v, want %v", r.Account, r.User, ft, w.fairTree)
		}
		if r.Fallback != w.fallback {
			t.Errorf("%s/%s: fallback %v, want %v (carol has unmeasured GPU time)", r.Account, r.User, r.Fallback, w.fallback)
		}
	}
	if seen != len(want) {
		t.Errorf("saw %d of %d rows", seen, len(want))
	}
	if len(s.Unattributed) != 1 || s.Unattributed[0].User != "dave" || !near(s.Unattributed[0].Allocated, 600, 1e-9) {
		t.Errorf("unattributed: %+v, want dave's 600 GPU-s", s.Unattributed)
	}
	if s.Users != 3 || s.Fallback {
		t.Errorf("users %d fallback %v", s.Users, s.Fallback)
	}
	golden(t, "standing.json", mustJSON(t, s))
	var buf bytes.Buffer
	if err := s.WriteTable(&buf); err != nil {
		t.Fatal(err)
	}
	golden(t, "standing.txt", buf.Bytes())
}

// TestStandingFallback: a stale ledger gives allocation-based charged usage and
// every row says so. With allocation charging, alice 7200, bob 3600, carol
// 2700: Fair Tree LF(bio) = 0.4/(2700/13500) = 2 > LF(ml) = 0.6/0.8 = 0.75;
// bob and alice now: 0.5/(3600/10800) = 1.5 > 0.5/(7200/10800) = 0.75.
func TestStandingFallback(t *testing.T) {
	tree, l, through := scenario(t)
	now := through.Add(10 * time.Minute)
	u, err := l.Usage(now)
	if !errors.Is(err, ErrStale) {
		t.Fatalf("10 min after the last input with a 5 min bound: %v, want ErrStale", err)
	}
	s := NewStanding(tree, AllocationFallback(u), err, StandingOptions{Now: now})
	if !s.Fallback || !strings.Contains(s.FallbackReason, "stale") {
		t.Errorf("fallback %v reason %q", s.Fallback, s.FallbackReason)
	}
	for _, r := range s.Associations {
		if !r.Fallback {
			t.Errorf("%s/%s not flagged as fallback", r.Account, r.User)
		}
	}
	tests := map[Assoc]float64{
		{Account: "ml", User: "alice"}: 7200, {Account: "ml", User: "bob"}: 3600, {Account: "bio", User: "carol"}: 2700,
	}
	k := math.Exp2(-(10 * time.Minute).Seconds() / DefaultHalfLife.Seconds())
	for _, r := range s.Associations {
		if want, ok := tests[Assoc{Account: r.Account, User: r.User}]; ok && !near(r.UsageCharged, want*k, 1e-9) {
			t.Errorf("%s: charged %v, want allocation %v", r.User, r.UsageCharged, want*k)
		}
	}
	var buf bytes.Buffer
	if err := s.WriteTable(&buf); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "# FALLBACK: fair-share ledger is stale") {
		t.Errorf("table does not say FALLBACK:\n%s", buf.String())
	}
}

func TestNumberJSON(t *testing.T) {
	in := []Number{1.5, Number(math.Inf(1)), Number(math.NaN()), 0}
	b, err := json.Marshal(in)
	if err != nil || string(b) != `[1.5,"inf",null,0]` {
		t.Fatalf("%s %v", b, err)
	}
	var out []Number
	if err := json.Unmarshal(b, &out); err != nil || out[0] != 1.5 || !math.IsInf(float64(out[1]), 1) || !math.IsNaN(float64(out[2])) {
		t.Fatalf("%v %v", out, err)
	}
	if err := json.Unmarshal([]byte(`["lots"]`), &out); err == nil {
		t.Error("accepted a word")
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return append(b, '\n')
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file (go test -update rewrites it):\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}
