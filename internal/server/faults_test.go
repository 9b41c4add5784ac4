package server

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/analyzer/faults"
	"github.com/gpuwatch/gpuwatch/analyzer/faults/faultstest"
	"github.com/gpuwatch/gpuwatch/internal/auth"
	"github.com/gpuwatch/gpuwatch/scheduler/drain"
	"github.com/gpuwatch/gpuwatch/telemetry"
	"github.com/gpuwatch/gpuwatch/test/realstore"
)

// remoteWriteFleet ships samples (sorted by time) to the server's remote-write
// endpoint ten minutes at a time, as agents would.
func remoteWriteFleet(t *testing.T, base string, samples []telemetry.Sample) {
	t.Helper()
	rw := map[string]string{"Content-Encoding": "snappy", "X-Prometheus-Remote-Write-Version": "0.1.0"}
	for len(samples) > 0 {
		end := samples[0].Time.Add(10 * time.Minute)
		n := 0
		for n < len(samples) && samples[n].Time.Before(end) {
			n++
		}
		body, err := realstore.EncodeWriteRequest(samples[:n])
		if err != nil {
			t.Fatal(err)
		}
		if resp := post(t, base+"/api/v1/write", "application/x-protobuf", body, rw); resp.StatusCode != http.StatusNoContent {
			b, _ := io.ReadAll(resp.Body)
			t.Fatalf("remote write: %d %s", resp.StatusCode, b)
		}
		samples = samples[n:]
	}
}

// TestFaultsAPI: the simulated fleet written through remote write into a
// server whose drain controller drains node-d by hand at t0+30h; the API
// answers faultstest's numbers (node-d's drain its only failure, no lemon:
// node-b's drains are not in this audit log), names bad parameters, and
// needs the read role.
func TestFaultsAPI(t *testing.T) {
	t0 := time.Now().Add(-50 * time.Hour).Truncate(time.Hour)
	var clock atomic.Int64
	clock.Store(t0.Add(30 * time.Hour).UnixNano())
	s, err := New(Options{DataDir: t.TempDir(), Clock: func() time.Time { return time.Unix(0, clock.Load()) },
		Drain: &DrainOptions{Actuator: drain.NewLogActuator(io.Discard), ActuatorName: "log"}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(t.Context())
	ts := httptest.NewServer(s.Handler())
	defer ts.Close()
	remoteWriteFleet(t, ts.URL, faultstest.Fleet(t0))
	if err := s.Drain().ManualDrain("node-d", "nvlink errors", "ops"); err != nil {
		t.Fatal(err)
	}
	clock.Store(time.Now().UnixNano())

	get := func(q url.Values) (*http.Response, string) {
		resp, err := http.Get(ts.URL + APIPrefix + "/faults?" + q.Encode())
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp, string(b)
	}
	resp, b := get(faults.Options{From: t0, To: t0.Add(faultstest.Window)}.Query())
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("GET faults: %d %s %s", resp.StatusCode, resp.Header.Get("Content-Type"), b)
	}
	var r faults.Report
	if err := json.Unmarshal([]byte(b), &r); err != nil {
		t.Fatal(err)
	}
	if r.XidTotal != 11 || r.Failures != 4 || r.DrainAuditNote != "" || len(r.Lemons) != 0 || len(r.DrainSoon) != 4 || len(r.IBPorts) != 3 || len(r.NVLinks) != 2 {
		t.Errorf("report: xids %g failures %d note %q lemons %+v drain soon %d ib %d nvlink %d; want 11, 4 (a 2, c 1, d 1), none, none, 4, 3, 2",
			r.XidTotal, r.Failures, r.DrainAuditNote, r.Lemons, len(r.DrainSoon), len(r.IBPorts), len(r.NVLinks))
	}
	var d *faults.MTBF
	for i := range r.MTBFByNode {
		if r.MTBFByNode[i].Key == "node-d" {
			d = &r.MTBFByNode[i]
		}
	}
	if d == nil || d.Failures != 1 || d.MTBFHours == nil || *d.MTBFHours != 48 {
		t.Errorf("node-d's MTBF %+v, want one failure (the manual drain), 48 h", d)
	}
	// A lemon at one drain in a week: node-d.
	q := faults.Options{From: t0, To: t0.Add(faultstest.Window), LemonCount: 1}.Query()
	_, b = get(q)
	var lr faults.Report
	if err := json.Unmarshal([]byte(b), &lr); err != nil || len(lr.Lemons) != 1 || lr.Lemons[0].Node != "node-d" || lr.Lemons[0].Reasons[0] != "manual drain by ops" {
		t.Errorf("lemon_count=1: %v %+v", err, lr.Lemons)
	}

	for _, c := range []struct {
		q    url.Values
		want string
	}{
		{url.Values{"from": {t0.Format(time.RFC3339)}, "to": {t0.Add(-time.Hour).Format(time.RFC3339)}}, "empty or reversed"},
		{url.Values{"last": {"a week"}}, `last \"a week\"`},
		{url.Values{"lemon_count": {"-2"}}, "lemon_count"},
		{url.Values{"top": {"0"}}, "top"},
	} {
		resp, b := get(c.q)
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(b, c.want) {
			t.Errorf("%s: %d %s, want 400 with %q", c.q.Encode(), resp.StatusCode, b, c.want)
		}
	}
	if role := RequiredRole(httptest.NewRequest(http.MethodGet, APIPrefix+"/faults", nil)); role != auth.RoleRead {
		t.Errorf("GET faults needs %v, want read", role)
	}
	if role := RequiredRole(httptest.NewRequest(http.MethodPost, APIPrefix+"/faults", nil)); role != auth.RoleAdmin {
		t.Errorf("POST faults needs %v, want admin", role)
	}
}

// TestFaultsWithoutDrain: a server without a drain controller says drains are
// not counted.
func TestFaultsWithoutDrain(t *testing.T) {
	s, err := New(Options{DataDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(t.Context())
	ts := httptest.NewServer(s.Handler())
	defer ts.Close()
	resp, err := http.Get(ts.URL + APIPrefix + "/faults?last=1h")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var r faults.Report
	if err := json.Unmarshal(b, &r); err != nil || resp.StatusCode != http.StatusOK || !strings.Contains(r.DrainAuditNote, "runs no drain controller") ||
		r.XidTotal != 0 || r.Lemons == nil || r.DrainSoon == nil || r.MTBFByNode == nil {
		t.Errorf("%d %v %s", resp.StatusCode, err, b)
	}
}
