package server

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/analyzer/report"
	"github.com/gpuwatch/gpuwatch/internal/auth"
	"github.com/gpuwatch/gpuwatch/scheduler/fairshare"
	"github.com/gpuwatch/gpuwatch/telemetry"
	"github.com/gpuwatch/gpuwatch/test/realstore"
)

// oneJobHour is an hour of one GPU allocated to job 7 (account ml, user ann)
// at 50 % utilization, shipped every 10 s: 1 GPU-hour allocated, 0.5 measured.
func oneJobHour(t0 time.Time) []telemetry.Sample { return jobHour(t0, "GPU-1", "7", "ml", "ann", 50) }

// jobHour is an hour of one GPU allocated to a job at a utilization.
func jobHour(t0 time.Time, uuid, job, account, user string, util float64) []telemetry.Sample {
	var out []telemetry.Sample
	for i := range 360 {
		at := t0.Add(time.Duration(i)*10*time.Second + 5*time.Second)
		out = append(out,
			telemetry.Sample{Name: telemetry.MetricGPUAllocationInfo, Time: at, Value: 1, Labels: telemetry.NewLabels(
				telemetry.LabelNode, "gpu01", telemetry.LabelGPUUUID, uuid, telemetry.LabelGPUIndex, "0",
				telemetry.LabelJobID, job, telemetry.LabelAccount, account, telemetry.LabelUser, user)},
			telemetry.Sample{Name: telemetry.DCGMGPUUtil, Time: at, Value: util, Labels: telemetry.NewLabels(
				telemetry.DCGMLabelUUID, uuid, telemetry.DCGMLabelGPU, "0", telemetry.DCGMLabelHostname, "gpu01")})
	}
	return out
}

// TestReportAPI: the report through remote write into the embedded store and
// GET /api/gpuwatch/v1/report, as JSON and as progress lines; bad parameters
// are 400 naming the parameter, an empty window 404.
func TestReportAPI(t *testing.T) {
	s, err := New(Options{DataDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(t.Context())
	ts := httptest.NewServer(s.Handler())
	defer ts.Close()
	t0 := time.Now().Add(-2 * time.Hour).Truncate(time.Hour)
	body, err := realstore.EncodeWriteRequest(oneJobHour(t0))
	if err != nil {
		t.Fatal(err)
	}
	rw := map[string]string{"Content-Encoding": "snappy", "X-Prometheus-Remote-Write-Version": "0.1.0"}
	if resp := post(t, ts.URL+"/api/v1/write", "application/x-protobuf", body, rw); resp.StatusCode != http.StatusNoContent {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("remote write: %d %s", resp.StatusCode, b)
	}
	get := func(q url.Values) (*http.Response, string) {
		resp, err := http.Get(ts.URL + APIPrefix + "/report?" + q.Encode())
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp, string(b)
	}
	q := report.Options{From: t0, To: t0.Add(time.Hour), By: report.ByUser}.Query()
	resp, b := get(q)
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("GET report: %d %s %s", resp.StatusCode, resp.Header.Get("Content-Type"), b)
	}
	var r report.Report
	if err := json.Unmarshal([]byte(b), &r); err != nil {
		t.Fatal(err)
	}
	if len(r.Groups) != 1 || r.Groups[0].Key != "ann" || r.Groups[0].Allocated != 1 || r.Groups[0].Measured != 0.5 || r.Groups[0].MeasuredBy != report.SourceGPUUtil {
		t.Errorf("report groups %+v", r.Groups)
	}
	if !strings.Contains(r.FairShareNote, "not configured") {
		t.Errorf("fair-share note %q", r.FairShareNote)
	}

	q.Set(report.ParamProgress, "1")
	resp, err = http.Get(ts.URL + APIPrefix + "/report?" + q.Encode())
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 16<<20)
	var lines []string
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	resp.Body.Close()
	// An hour at 10 s is 360 steps: one chunk, and one of the previous hour.
	if len(lines) != 3 || lines[0] != `{"progress":{"done":1,"total":2}}` || !strings.HasPrefix(lines[2], `{"report":{`) {
		t.Errorf("progress answer:\n%s", strings.Join(lines, "\n"))
	}

	// A second job, of account cv: a filter keeps one account's rows and
	// totals, or both.
	if err := s.Appender().Append(t.Context(), jobHour(t0, "GPU-2", "8", "cv", "bo", 20)); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		filter         url.Values
		keys           string
		allocated, eff float64
	}{
		{url.Values{}, "[ann bo]", 2, 0.35},
		{url.Values{"account": {"cv"}}, "[bo]", 1, 0.2},
		{url.Values{"user": {"ann"}}, "[ann]", 1, 0.5},
		{url.Values{"account": {"ml", "cv"}, "user": {"bo"}}, "[bo]", 1, 0.2},
	} {
		q := report.Options{From: t0, To: t0.Add(time.Hour), By: report.ByUser}.Query()
		for k, v := range c.filter {
			q[k] = v
		}
		resp, b := get(q)
		var r report.Report
		if err := json.Unmarshal([]byte(b), &r); err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: %d %s", q.Encode(), resp.StatusCode, b)
		}
		var keys []string
		for _, g := range r.Groups {
			keys = append(keys, g.Key)
		}
		slices.Sort(keys)
		if fmt.Sprint(keys) != c.keys || r.Total.Allocated != c.allocated || r.Total.Efficiency == nil || math.Abs(*r.Total.Efficiency-c.eff) > 1e-9 ||
			fmt.Sprint(r.Filter.Accounts, r.Filter.Users) != fmt.Sprint(c.filter["account"], c.filter["user"]) {
			t.Errorf("%s: groups %v, total %+v, filter %+v", c.filter.Encode(), keys, r.Total, r.Filter)
		}
	}

	for _, c := range []struct {
		q    url.Values
		code int
		want string
	}{
		{url.Values{"by": {"team"}, "last": {"1h"}}, 400, `by: unknown grouping \"team\"`},
		{url.Values{"account": {""}}, 400, "account: an empty value"},
		{url.Values{"user": {"ann", strings.Repeat("u", report.MaxFilterValue+1)}}, 400, "report: user"},
		{url.Values{"from": {t0.Format(time.RFC3339)}, "to": {t0.Add(time.Hour).Format(time.RFC3339)}, "account": {"nobody"}}, 404, "account nobody"},
		{url.Values{"from": {t0.Format(time.RFC3339)}, "to": {t0.Add(-time.Hour).Format(time.RFC3339)}}, 400, "empty or reversed"},
		{url.Values{"from": {"yesterday"}, "to": {"today"}}, 400, "RFC 3339"},
		{url.Values{"idle_below": {"150%"}}, 400, "idle_below"},
		{url.Values{"from": {t0.Add(-48 * time.Hour).Format(time.RFC3339)}, "to": {t0.Add(-47 * time.Hour).Format(time.RFC3339)}}, 404, "no GPU was seen allocated"},
	} {
		resp, b := get(c.q)
		if resp.StatusCode != c.code || !strings.Contains(b, c.want) {
			t.Errorf("%s: %d %s, want %d with %q", c.q.Encode(), resp.StatusCode, b, c.code, c.want)
		}
	}
	if role := RequiredRole(httptest.NewRequest(http.MethodGet, APIPrefix+"/report", nil)); role != auth.RoleRead {
		t.Errorf("GET report needs %v, want read", role)
	}
}

// TestReportFairShare: on a server running fair share, the report by account
// carries each account's classic standing and by user each user's Fair Tree
// factor; by node it says why there is none. Nothing has been charged yet,
// so the factors are known: classic 2^0 = 1 for every account, Fair Tree
// rank/users = 1 for ann (the only user, ranked first).
func TestReportFairShare(t *testing.T) {
	cfg, err := fairshare.ParseConfig("fairshare.yaml", []byte("accounts:\n  - {name: ml, shares: 3, users: [{name: ann}]}\n  - {name: cv, shares: 1, users: [{name: bo}]}\n"))
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(Options{DataDir: t.TempDir(), FairShare: cfg})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(t.Context())
	t0 := time.Now().Add(-2 * time.Hour).Truncate(time.Hour)
	if err := s.Appender().Append(t.Context(), oneJobHour(t0)); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		by         report.By
		key        string
		factor     float64
		shares     float64
		note       string
		wantFactor bool
	}{
		{report.ByAccount, "ml", 1, 0.75, "", true},
		{report.ByUser, "ann", 1, 0.75, "", true},
		{report.ByNode, "gpu01", 0, 0, "by account or by user only", false},
		// Filtered, a group keeps its own standing.
		{report.ByAccount, "ml", 1, 0.75, "", true},
	} {
		rec := httptest.NewRecorder()
		q := report.Options{From: t0, To: t0.Add(time.Hour), By: c.by, Filter: report.Filter{Accounts: []string{"ml"}}}.Query()
		s.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, APIPrefix+"/report?"+q.Encode(), nil))
		var r report.Report
		if err := json.Unmarshal(rec.Body.Bytes(), &r); err != nil || rec.Code != http.StatusOK || len(r.Groups) != 1 {
			t.Fatalf("by %s: %d %s", c.by, rec.Code, rec.Body)
		}
		g := r.Groups[0]
		switch {
		case g.Key != c.key:
			t.Errorf("by %s: group %q", c.by, g.Key)
		case !c.wantFactor && (g.FairShare != nil || !strings.Contains(r.FairShareNote, c.note)):
			t.Errorf("by %s: fair share %+v, note %q", c.by, g.FairShare, r.FairShareNote)
		case c.wantFactor && (g.FairShare == nil || g.FairShare.Factor == nil || *g.FairShare.Factor != c.factor || g.FairShare.SharesNormalized != c.shares):
			t.Errorf("by %s: fair share %+v, want factor %g, shares %g", c.by, g.FairShare, c.factor, c.shares)
		}
	}
}

// TestReportExternalStore: with --store.url the report reads
// VictoriaMetrics through the same API.
func TestReportExternalStore(t *testing.T) {
	vm := realstore.StartVictoriaMetrics(t)
	t0 := time.Now().Add(-2 * time.Hour).Truncate(time.Hour)
	vm.Write(oneJobHour(t0))
	s, err := New(Options{StoreURL: vm.URL()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(t.Context())
	rec := httptest.NewRecorder()
	q := report.Options{From: t0, To: t0.Add(time.Hour), By: report.ByJob}.Query()
	s.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, APIPrefix+"/report?"+q.Encode(), nil))
	var r report.Report
	if err := json.Unmarshal(rec.Body.Bytes(), &r); err != nil || rec.Code != http.StatusOK {
		t.Fatalf("%d %s", rec.Code, rec.Body)
	}
	if len(r.Groups) != 1 || r.Groups[0].Key != "7" || r.Groups[0].Allocated != 1 || r.Groups[0].Measured != 0.5 {
		t.Errorf("groups %+v", r.Groups)
	}
}
