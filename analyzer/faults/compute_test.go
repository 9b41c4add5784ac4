package faults

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"math"
	"net/url"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/analyzer/faults/faultstest"
	"github.com/gpuwatch/gpuwatch/analyzer/report"
	"github.com/gpuwatch/gpuwatch/telemetry/store"
	"github.com/gpuwatch/gpuwatch/telemetry/store/embedded"
	"github.com/gpuwatch/gpuwatch/telemetry/store/embedded/embeddedtest"
)

func fleetWindow() time.Time { return time.Now().Add(-50 * time.Hour).Truncate(time.Hour) }

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-6*math.Max(1, math.Abs(b)) }

func keys(cs []Count) string {
	var b strings.Builder
	for _, c := range cs {
		fmt.Fprintf(&b, "%s=%g ", c.Key, c.Count)
	}
	return strings.TrimSpace(b.String())
}

// CheckFleet compares a report of faultstest.Fleet with the answers its comment
// derives by hand.
func checkFleet(t *testing.T, r *Report) {
	t.Helper()
	if r.XidTotal != 11 || r.Nodes != 4 || r.GPUs != 8 || r.Failures != 7 {
		t.Errorf("xids %g nodes %d gpus %d failures %d, want 11, 4, 8, 7", r.XidTotal, r.Nodes, r.GPUs, r.Failures)
	}
	for _, c := range []struct {
		got  []Count
		want string
	}{
		{r.XidByCode, "13=5 79=3 31=2 48=1"},
		{r.XidByAct, "RESTART_APP=7 RESET_GPU=3 DRAIN_AND_RESET=1"},
		{r.XidByModel, faultstest.H100 + "=8 " + faultstest.A100 + "=3"},
		{r.XidByNode, "node-a=8 node-c=3"},
		{r.Conditions, "nvlink-errors=2 ib-flap=1"},
	} {
		if got := keys(c.got); got != c.want {
			t.Errorf("xid counts %q, want %q", got, c.want)
		}
	}
	mt := func(ms []MTBF) string {
		var b strings.Builder
		for _, m := range ms {
			fmt.Fprintf(&b, "%s:%d/%g=%s ", m.Key, m.Failures, m.ObservedHours, hoursOrDash(m.MTBFHours))
		}
		return strings.TrimSpace(b.String())
	}
	if got, want := mt(r.MTBFByNode), "node-b:3/48=16.0 node-a:2/48=24.0 node-c:1/48=48.0 node-d:1/48=48.0"; got != want {
		t.Errorf("MTBF by node %q, want %q", got, want)
	}
	if got, want := mt(r.MTBFByMod), faultstest.H100+":5/96=19.2 "+faultstest.A100+":2/96=48.0"; got != want {
		t.Errorf("MTBF by model %q, want %q", got, want)
	}
	if len(r.Lemons) != 1 || r.Lemons[0].Node != "node-b" || r.Lemons[0].Drains != 3 || r.Lemons[0].MaxWithin != 3 {
		t.Errorf("lemons %+v, want node-b with 3 drains", r.Lemons)
	}
	if len(r.DrainSoon) != 4 {
		t.Fatalf("drain soon %+v, want b0, c1, a0, d1", r.DrainSoon)
	}
	if d1 := r.DrainSoon[3]; d1.GPU != "GPU-d1" || !d1.RemapPending || d1.RemapFailed || d1.HoursToLimit != nil {
		t.Errorf("drain soon last %+v, want GPU-d1 with a pending remap", d1)
	}
	b0, c1, a0 := r.DrainSoon[0], r.DrainSoon[1], r.DrainSoon[2]
	if b0.GPU != "GPU-b0" || !b0.RemapFailed || b0.HoursToLimit != nil {
		t.Errorf("drain soon first %+v, want GPU-b0 with a failed remap", b0)
	}
	if c1.GPU != "GPU-c1" || c1.What != "retired_pages" || c1.Value != 50 || c1.Growth != 20 || c1.Limit != RetiredPagesLimit || c1.HoursToLimit == nil || !near(*c1.HoursToLimit, 24) {
		t.Errorf("drain soon second %+v, want GPU-c1 retired pages 50 (+20), 24 h to 60", c1)
	}
	if a0.GPU != "GPU-a0" || a0.What != "remapped_rows" || a0.Value != 200 || a0.Growth != 100 || a0.HoursToLimit == nil || !near(*a0.HoursToLimit, 149.76) {
		t.Errorf("drain soon third %+v, want GPU-a0 remapped rows 200 (+100), 149.76 h to 512", a0)
	}
	wantIB := []IBPort{{"node-a", "mlx5_0", "1", 3, 10}, {"node-c", "mlx5_0", "1", 1, 0}, {"node-b", "mlx5_1", "1", 0, 500}}
	if !reflect.DeepEqual(r.IBPorts, wantIB) {
		t.Errorf("InfiniBand ports %+v, want %+v", r.IBPorts, wantIB)
	}
	wantNV := []NVLinkLink{{"node-c", "GPU-c0", "0", 0, 200, 1}, {"node-a", "GPU-a0", "3", 60, 40, 0}}
	if !reflect.DeepEqual(r.NVLinks, wantNV) {
		t.Errorf("NVLink links %+v, want %+v", r.NVLinks, wantNV)
	}
}

func fleetStore(t *testing.T, t0 time.Time) *embedded.Store {
	st := embeddedtest.Open(t, embedded.Options{})
	if err := st.Append(context.Background(), faultstest.Fleet(t0)); err != nil {
		t.Fatal(err)
	}
	return st
}

func TestFleet(t *testing.T) {
	t0 := fleetWindow()
	st := fleetStore(t, t0)
	r, err := Compute(context.Background(), st, Options{From: t0, To: t0.Add(faultstest.Window), LemonWindow: 24 * time.Hour},
		FromAudit(faultstest.Audit(t0)), "")
	if err != nil {
		t.Fatal(err)
	}
	checkFleet(t, r)

	// A lemon needs three drains within the lemon window: node-b's 3h, 8h
	// and 20h are within 24 h but not within 12 h; four drains are never seen.
	for _, c := range []struct {
		count  int
		window time.Duration
		want   int
	}{{3, 12 * time.Hour, 0}, {2, 12 * time.Hour, 1}, {4, 7 * 24 * time.Hour, 0}} {
		r, err := Compute(context.Background(), st, Options{From: t0, To: t0.Add(faultstest.Window), LemonCount: c.count, LemonWindow: c.window},
			FromAudit(faultstest.Audit(t0)), "")
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Lemons) != c.want {
			t.Errorf("%d drains in %s: lemons %+v, want %d", c.count, c.window, r.Lemons, c.want)
		}
	}

	// Without the audit log: no drains, so node-b and node-d have no failure.
	r, err = Compute(context.Background(), st, Options{From: t0, To: t0.Add(faultstest.Window)}, nil, "no drain controller")
	if err != nil {
		t.Fatal(err)
	}
	if r.Failures != 3 || len(r.Lemons) != 0 || r.DrainAuditNote == "" {
		t.Errorf("without drains: failures %d lemons %+v note %q, want 3 failures, no lemon, a note", r.Failures, r.Lemons, r.DrainAuditNote)
	}
	// The first day only: Xid 79 at 1h, 1h02, 20h; 13; 31; 48.
	r, err = Compute(context.Background(), st, Options{From: t0, To: t0.Add(24 * time.Hour), Top: 1}, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	if r.XidTotal != 11 || len(r.IBPorts) != 1 || len(r.NVLinks) != 1 || len(r.DrainSoon) != 1 || r.DrainSoon[0].GPU != "GPU-c1" {
		t.Errorf("first day, top 1: xids %g ib %+v nvlink %+v drain soon %+v", r.XidTotal, r.IBPorts, r.NVLinks, r.DrainSoon)
	}
}

func TestRender(t *testing.T) {
	t0 := fleetWindow()
	st := fleetStore(t, t0)
	r, err := Compute(context.Background(), st, Options{From: t0, To: t0.Add(faultstest.Window), LemonWindow: 24 * time.Hour},
		FromAudit(faultstest.Audit(t0)), "")
	if err != nil {
		t.Fatal(err)
	}
	var tb, cb, jb bytes.Buffer
	for _, c := range []struct {
		f report.Format
		w *bytes.Buffer
	}{{report.FormatTable, &tb}, {report.FormatCSV, &cb}, {report.FormatJSON, &jb}} {
		if err := Render(c.w, r, c.f); err != nil {
			t.Fatal(err)
		}
	}
	for _, want := range []string{"11 Xids, 7 failures", "Lemon nodes (3 drains or more within 24h0m0s)", "node-b", "GPU-c1", "retired_pages", "149.8", "mlx5_1"} {
		if !strings.Contains(tb.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, tb.String())
		}
	}
	rows, err := csv.NewReader(&cb).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, row := range rows {
		if len(row) != 4 {
			t.Fatalf("csv row %q", row)
		}
		if row[0] == "mtbf_by_node" && row[1] == "node-b" && row[2] == "mtbf_hours" && row[3] == "16" {
			found = true
		}
	}
	if !found {
		t.Errorf("csv lacks node-b's MTBF of 16 h:\n%s", cb.String())
	}
	var back Report
	if err := json.Unmarshal(jb.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	checkFleet(t, &back)
	if _, err := ParseFormat("html"); err == nil || !strings.Contains(err.Error(), "table, json, csv") {
		t.Errorf("html: %v", err)
	}
}

func TestParseQuery(t *testing.T) {
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	flag := func(p string) string { return "--" + strings.ReplaceAll(p, "_", "-") }
	o, err := ParseQuery(url.Values{}, now, flag)
	if err != nil || !o.To.Equal(now) || o.To.Sub(o.From) != 7*24*time.Hour {
		t.Errorf("default window %v–%v, %v; want the last 7 days", o.From, o.To, err)
	}
	o, err = ParseQuery(url.Values{"last": {"24h"}, "lemon_count": {"2"}, "lemon_window": {"48h"}, "top": {"5"}}, now, flag)
	if err != nil || o.LemonCount != 2 || o.LemonWindow != 48*time.Hour || o.Top != 5 {
		t.Errorf("%+v %v", o, err)
	}
	back, err := ParseQuery(o.Query(), now, flag)
	if err != nil || !reflect.DeepEqual(back.Query(), o.Query()) {
		t.Errorf("round trip %v %v", back.Query(), err)
	}
	for _, c := range []struct {
		v    url.Values
		want string
	}{
		{url.Values{"last": {"-1h"}}, "--last"},
		{url.Values{"from": {"2026-11-02T00:00:00Z"}, "to": {"2026-11-01T00:00:00Z"}}, "empty or reversed"},
		{url.Values{"lemon_count": {"0"}}, "--lemon-count \"0\""},
		{url.Values{"lemon_window": {"week"}}, "--lemon-window"},
		{url.Values{"top": {"x"}}, "--top"},
	} {
		if _, err := ParseQuery(c.v, now, flag); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want an error naming %s", c.v, err, c.want)
		}
	}
}

// TestCounterResets: a counter going down is a reset; the value after it is
// growth; a series born in the window counts its first value only when told.
func TestCounterResets(t *testing.T) {
	t0 := time.Unix(0, 0)
	s := seriesOf(t0, 7, 7, 0, 1, 1, 3)
	if g, evs := counter(s, t0, false); g != 3 || len(evs) != 2 {
		t.Errorf("growth %g events %v, want 3 in 2", g, evs)
	}
	born := seriesOf(t0.Add(time.Minute), 2, 2, 5)
	if g, _ := counter(born, t0, true); g != 5 {
		t.Errorf("born: %g, want 5", g)
	}
	if g, _ := counter(born, t0, false); g != 3 {
		t.Errorf("not born: %g, want 3", g)
	}
}

func seriesOf(start time.Time, vs ...float64) store.Series {
	var s store.Series
	for i, v := range vs {
		s.Points = append(s.Points, store.Point{T: start.Add(time.Duration(i) * time.Minute), V: v})
	}
	return s
}
