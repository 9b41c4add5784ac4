package report

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/telemetry/store/embedded"
	"github.com/gpuwatch/gpuwatch/telemetry/store/embedded/embeddedtest"
	"github.com/gpuwatch/gpuwatch/test/browser"
)

func syntheticReport(t *testing.T) *Report {
	t.Helper()
	st := embeddedtest.Open(t, embedded.Options{})
	t0 := syntheticWindow()
	if err := st.Append(context.Background(), syntheticFleet(t0)); err != nil {
		t.Fatal(err)
	}
	r, err := Compute(context.Background(), st, Options{From: t0, To: t0.Add(2 * 3600e9), By: ByAccount})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestRenderFormats(t *testing.T) {
	r := syntheticReport(t)
	render := func(f Format) string {
		var b bytes.Buffer
		if err := Render(&b, r, f); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		return b.String()
	}
	// vision: 3.67 allocated, 1.46 measured, 39.8 %; nlp 4.00, 30.0 %, unmeasured 2.00.
	table := render(FormatTable)
	for _, want := range []string{"GPU utilization by account", "vision", "3.67", "1.46", "39.8%", "nlp", "30.0%", "sm_active+gpu_util", "Top idle jobs", "alice"} {
		if !strings.Contains(table, want) {
			t.Errorf("table lacks %q:\n%s", want, table)
		}
	}
	rows, err := csv.NewReader(strings.NewReader(render(FormatCSV))).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 4 || rows[0][0] != "account" || rows[1][0] != "nlp" || rows[2][0] != "vision" || rows[3][0] != "total" || rows[2][3] != "3.67" {
		t.Errorf("csv rows %q", rows)
	}
	var back Report
	if err := json.Unmarshal([]byte(render(FormatJSON)), &back); err != nil || len(back.Groups) != 2 || !near(back.Groups[1].Allocated, r.Groups[1].Allocated) {
		t.Errorf("json round trip: %v %+v", err, back.Groups)
	}
	md := render(FormatMarkdown)
	if !strings.Contains(md, "| vision | 3 | 3 | 3.67 | 1.46 | 39.8% |") {
		t.Errorf("markdown:\n%s", md)
	}
	if _, err := ParseFormat("pdf"); err == nil || !strings.Contains(err.Error(), "table, csv, json, markdown, html") {
		t.Errorf("unknown format: %v", err)
	}
}

func TestHTMLEscapesAndFetchesNothing(t *testing.T) {
	r := syntheticReport(t)
	r.Groups[0].Key = `<script>alert(1)</script>`
	var b bytes.Buffer
	if err := WriteHTML(&b, r); err != nil {
		t.Fatal(err)
	}
	s := b.String()
	if strings.Contains(s, "<script") {
		t.Error("a group key reached the page unescaped")
	}
	for _, ref := range []string{"src=", "href=", "@import", "url("} {
		if strings.Contains(s, ref) {
			t.Errorf("the page refers to something outside it (%s)", ref)
		}
	}
	if strings.Count(strings.ReplaceAll(s, `xmlns="http://www.w3.org/2000/svg"`, ""), "http") != 0 {
		t.Error("the page names a URL")
	}
}

// TestHTMLInBrowser opens the HTML report from a file in headless Chromium:
// it renders with no console error or failed request, shows the groups, and
// the charts draw one bar per group.
func TestHTMLInBrowser(t *testing.T) {
	r := syntheticReport(t)
	path := filepath.Join(t.TempDir(), "report.html")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := WriteHTML(f, r); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	b := browser.New(t)
	page := b.Open(t, "file://"+path)
	if h := page.Text("h1"); !strings.Contains(h, "GPU utilization by account") {
		t.Errorf("heading %q", h)
	}
	table := page.Text("table")
	for _, want := range []string{"vision", "nlp", "39.8%", "total"} {
		if !strings.Contains(table, want) {
			t.Errorf("table lacks %q: %s", want, table)
		}
	}
	if n := page.Count("svg.gw-hours g"); n != 2 {
		t.Errorf("hours chart has %d bars, want 2", n)
	}
	if n := page.Count("svg.gw-efficiency g"); n != 2 {
		t.Errorf("efficiency chart has %d bars, want 2", n)
	}
	page.NoProblems()
	page.Screenshot("utilization-report")
}

// TestFilteredReport: a filter keeps the rows, totals and previous period of
// its allocations, and every format says it; an unfiltered report says none.
func TestFilteredReport(t *testing.T) {
	st := embeddedtest.Open(t, embedded.Options{})
	t0 := syntheticWindow()
	if err := st.Append(t.Context(), syntheticFleet(t0)); err != nil {
		t.Fatal(err)
	}
	compute := func(by By, f Filter) *Report {
		r, err := Compute(t.Context(), st, Options{From: t0, To: t0.Add(2 * time.Hour), By: by, Filter: f})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	// vision: 3.67 GPU-hours, and job 0's two hours before the window.
	r := compute(ByAccount, Filter{Accounts: []string{"vision"}})
	if len(r.Groups) != 1 || r.Groups[0].Key != "vision" || !near(r.Total.Allocated, 11.0/3) || r.Total.Previous == nil || !near(r.Total.Previous.Allocated, 2) {
		t.Errorf("account vision: %+v, total %+v", r.Groups, r.Total)
	}
	// carol's job 4 alone of nlp's (the pods on GPU-C are nlp's too).
	if r := compute(ByAccount, Filter{Users: []string{"carol"}}); len(r.Groups) != 1 || r.Groups[0].Key != "nlp" || !near(r.Total.Allocated, 2) || r.Total.Previous != nil {
		t.Errorf("user carol: %+v, total %+v", r.Groups, r.Total)
	}
	// A pod without an account has its namespace's; user too.
	if r := compute(ByJob, Filter{Accounts: []string{"nlp"}, Users: []string{"nlp"}}); len(r.Groups) != 2 || r.Groups[0].Key != "nlp/p0" || !near(r.Total.Allocated, 2) {
		t.Errorf("account and user nlp: %+v, total %+v", r.Groups, r.Total)
	}
	if _, err := Compute(t.Context(), st, Options{From: t0, To: t0.Add(2 * time.Hour), Filter: Filter{Accounts: []string{"nobody"}}}); !errors.Is(err, ErrNoData) || !strings.Contains(err.Error(), "account nobody") {
		t.Errorf("account nobody: %v, want ErrNoData naming the filter", err)
	}
	for _, f := range []Format{FormatTable, FormatMarkdown, FormatHTML, FormatJSON} {
		for _, c := range []struct {
			r    *Report
			want bool
		}{{r, true}, {syntheticReport(t), false}} {
			var b bytes.Buffer
			if err := Render(&b, c.r, f); err != nil {
				t.Fatal(err)
			}
			says := strings.Contains(b.String(), "nly allocations of account vision") || strings.Contains(b.String(), `"filter": {`)
			if says != c.want {
				t.Errorf("%s: says a filter %v, want %v:\n%.600s", f, says, c.want, b.String())
			}
		}
	}
}
