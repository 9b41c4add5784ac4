package datasource_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/gpuwatch/gpuwatch/analyzer/faults/faultstest"
	"github.com/gpuwatch/gpuwatch/analyzer/jobstats/jobstatstest"
	"github.com/gpuwatch/gpuwatch/analyzer/stragglers/stragglerstest"
	"github.com/gpuwatch/gpuwatch/datasource"
	"github.com/gpuwatch/gpuwatch/internal/auth"
	"github.com/gpuwatch/gpuwatch/internal/server"
	"github.com/gpuwatch/gpuwatch/scheduler/drain"
	"github.com/gpuwatch/gpuwatch/scheduler/fairshare"
	"github.com/gpuwatch/gpuwatch/scheduler/placement/service"
	"github.com/gpuwatch/gpuwatch/telemetry"
)

// jobServer is a server holding jobstatstest's job 4242 (and its neighbour
// 99) from t0, with the drain controller (log actuator), placement and fair
// share (accounts vision and other) running.
func jobServer(t *testing.T, t0 time.Time) *gpuwatch {
	t.Helper()
	cfg, err := fairshare.ParseConfig("fairshare.yaml", []byte("accounts:\n  - {name: vision, shares: 3, users: [{name: alice}]}\n  - {name: other, shares: 1, users: [{name: bob}]}\n"))
	if err != nil {
		t.Fatal(err)
	}
	g := startServer(t, func(o *server.Options) {
		o.Drain = &server.DrainOptions{Actuator: drain.NewLogActuator(io.Discard), ActuatorName: "log", PollInterval: 5 * time.Millisecond}
		o.Placement = &server.PlacementOptions{Interval: 100 * time.Millisecond}
		o.FairShare = cfg
	})
	g.write(t, jobstatstest.Samples(t0))
	return g
}

// TestJobQueries: the report, job stats, drain audit log, placement
// explanation and fair-share standing of a known job, through QueryData as
// Grafana calls it, with a read token.
func TestJobQueries(t *testing.T) {
	t0 := time.Now().Add(-3 * time.Hour).Truncate(time.Minute)
	g := jobServer(t, t0)
	ds := newDatasource(t, g.ts.URL, readSecret)
	from, to := t0.Add(-10*time.Minute), t0.Add(2*time.Hour+10*time.Minute)

	t.Run("jobstats", func(t *testing.T) {
		r := query(t, ds, from, to, map[string]string{"A": `{"queryType":"jobstats","jobId":"4242"}`})["A"]
		fs := frames(t, r, 2)
		gpus, job := fs[0], fs[1]
		// jobstatstest's comment derives them: three GPUs of 2 h each, a1 did
		// nothing, b0 measured by utilization (mean 41 %).
		if got := strs(column(t, gpus, "UUID", data.FieldTypeString, "")); strings.Join(got, " ") != "GPU-a0 GPU-a1 GPU-b0" {
			t.Errorf("GPUs %q, want GPU-a0 GPU-a1 GPU-b0", got)
		}
		hrs := column(t, gpus, "Allocated", data.FieldTypeFloat64, datasource.UnitHours)
		act := column(t, gpus, "Activity", data.FieldTypeNullableFloat64, datasource.UnitFraction)
		sm := column(t, gpus, "SM active", data.FieldTypeNullableFloat64, datasource.UnitFraction)
		nothing := column(t, gpus, "Did nothing", data.FieldTypeBool, "")
		column(t, gpus, "Utilization", data.FieldTypeNullableFloat64, datasource.UnitPercent)
		column(t, gpus, "Memory peak", data.FieldTypeNullableFloat64, datasource.UnitMiB)
		column(t, gpus, "Energy", data.FieldTypeNullableFloat64, datasource.UnitJoule)
		for i, w := range []struct {
			act     float64
			sm      float64
			nothing bool
		}{{0.6, 0.6, false}, {0.01, 0.01, true}, {0.41, -1, false}} {
			if !near(num(hrs.At(i)), 2) || !near(num(act.At(i)), w.act) || !near(num(sm.At(i)), w.sm) || nothing.At(i).(bool) != w.nothing {
				t.Errorf("GPU %d: %g h, activity %v, SM active %v, did nothing %v; want 2 h, %g, %g, %v", i, num(hrs.At(i)), num(act.At(i)), num(sm.At(i)), nothing.At(i), w.act, w.sm, w.nothing)
			}
		}
		const verdict = "3 GPUs allocated, 1 did nothing, 1 idle for 30m0s or more; mean activity 34%; 1 Xid"
		if v := column(t, job, "Verdict", data.FieldTypeString, "").At(0); v != verdict {
			t.Errorf("verdict %q, want %q", v, verdict)
		}
		if gpus.Meta == nil || len(gpus.Meta.Notices) != 1 || gpus.Meta.Notices[0].Text != verdict {
			t.Errorf("GPU table's notice %+v, want the verdict", gpus.Meta)
		}
		if a := column(t, job, "Allocated", data.FieldTypeFloat64, datasource.UnitGPUHours).At(0); !near(num(a), 6) {
			t.Errorf("job allocated %v GPU-h, want 6", a)
		}
		if s := column(t, job, "Start", data.FieldTypeTime, "").At(0).(time.Time); !s.Equal(t0.Add(-time.Minute)) {
			t.Errorf("job start %s, want %s", s, t0.Add(-time.Minute))
		}
		if a := column(t, job, "Account", data.FieldTypeString, "").At(0); a != "vision" {
			t.Errorf("account %q", a)
		}
		for _, f := range fs {
			if f.RefID != "A" {
				t.Errorf("frame %q refId %q", f.Name, f.RefID)
			}
		}
	})

	t.Run("report", func(t *testing.T) {
		rs := query(t, ds, t0, t0.Add(2*time.Hour), map[string]string{
			"job":     `{"queryType":"report","by":"job","step":"1m"}`,
			"account": `{"queryType":"report","by":"account","step":"1m","idleBelow":"5%","idleFor":"30m"}`,
		})
		f := frames(t, rs["job"], 1)[0]
		jobs := column(t, f, "Job", data.FieldTypeString, "")
		if got := strings.Join(strs(jobs), " "); got != "4242 99 total" {
			t.Errorf("report by job: rows %q, want 4242 99 total", got)
		}
		alloc := column(t, f, "Allocated", data.FieldTypeFloat64, datasource.UnitGPUHours)
		column(t, f, "Measured", data.FieldTypeFloat64, datasource.UnitGPUHours)
		column(t, f, "Efficiency", data.FieldTypeNullableFloat64, datasource.UnitFraction)
		column(t, f, "Memory headroom", data.FieldTypeNullableFloat64, datasource.UnitFraction)
		column(t, f, "GPUs", data.FieldTypeInt64, "")
		// One allocation sample a minute, each standing for the agents'
		// 10 s interval (docs/reports.md, "Sample weighting"): job 4242's 3
		// GPUs × 120 samples × 10 s = 1 GPU-hour in [t0, t0+2h] (the
		// sample at t0 falls in the step before), 4242's less one step:
		// 3 × 119 × 10 s.
		i := row(t, f, "Job", "4242")
		if a := num(alloc.At(i)); !near(a, 3*119*10.0/3600) {
			t.Errorf("job 4242 allocated %g GPU-h, want %g", a, 3*119*10.0/3600)
		}
		if o := column(t, f, "Owners", data.FieldTypeString, "").At(i); o != "vision" {
			t.Errorf("job 4242's owners %q, want its account vision", o)
		}
		gpus := column(t, f, "GPUs", data.FieldTypeInt64, "")
		if n := gpus.At(i).(int64); n != 3 {
			t.Errorf("job 4242: %d GPUs, want 3", n)
		}
		fa := frames(t, rs["account"], 1)[0]
		if got := strings.Join(strs(column(t, fa, "Account", data.FieldTypeString, "")), " "); !strings.HasPrefix(got, "vision") || !strings.HasSuffix(got, "total") {
			t.Errorf("report by account: rows %q, want vision first and the total last", got)
		}
		// The server runs fair share: the accounts carry their classic factor
		// (nothing charged when the report ran: 1 for vision).
		fs := column(t, fa, "Fair-share factor", data.FieldTypeNullableFloat64, "")
		if v := fs.At(row(t, fa, "Account", "vision")); v == nil || v.(*float64) == nil {
			t.Errorf("vision's fair-share factor is empty")
		}
	})

	t.Run("drains", func(t *testing.T) {
		start := time.Now().Add(-time.Second)
		g.manualDrain(t, "node-b", "fan failure, ticket 7")
		r := query(t, ds, start, time.Now().Add(time.Minute), map[string]string{"D": `{"queryType":"drains"}`})["D"]
		f := frames(t, r, 1)[0]
		column(t, f, "Time", data.FieldTypeTime, "")
		nodes, users, reasons := column(t, f, "Node", data.FieldTypeString, ""), column(t, f, "User", data.FieldTypeString, ""), column(t, f, "Reason", data.FieldTypeString, "")
		found := false
		for i := 0; i < f.Rows(); i++ {
			found = found || (nodes.At(i) == "node-b" && users.At(i) == "oncall" && strings.Contains(reasons.At(i).(string), "ticket 7"))
		}
		if !found {
			t.Errorf("the audit log has no manual drain of node-b by oncall:\n%s", dump(f))
		}
		// A time range before the drain holds none of it.
		r = query(t, ds, start.Add(-time.Hour), start, map[string]string{"D": `{"queryType":"drains"}`})["D"]
		if f := frames(t, r, 1)[0]; f.Rows() != 0 {
			t.Errorf("the hour before the drain: %d records, want none", f.Rows())
		}
	})

	t.Run("explain", func(t *testing.T) {
		// Two idle nodes reporting now; a gang of 4 GPUs on one node, every
		// candidate recorded (explain), as soon as a snapshot holds them.
		g.write(t, inventory(time.Now()))
		var placed service.PlaceResponse
		deadline := time.Now().Add(30 * time.Second)
		for {
			code, body := g.call(t, http.MethodPost, server.APIPrefix+"/place", operateSecret,
				[]byte(`{"job_id":"j1","gpus":4,"gpus_per_node":4,"explain":true,"dry_run":true}`), map[string]string{"Content-Type": "application/json"})
			if code == http.StatusOK {
				if err := json.Unmarshal(body, &placed); err != nil {
					t.Fatal(err)
				}
				if len(placed.Assignments) > 0 {
					break
				}
			} else if code != http.StatusServiceUnavailable {
				t.Fatalf("place: %d %s", code, body)
			}
			if time.Now().After(deadline) {
				t.Fatalf("no placement in 30 s: %d %s", code, body)
			}
			time.Sleep(100 * time.Millisecond)
		}
		t.Logf("decision %s: %s, %d evaluated, %d feasible, %d assignments", placed.ID, placed.Outcome, placed.Evaluated, placed.Feasible, len(placed.Assignments))
		r := query(t, ds, from, to, map[string]string{"E": `{"queryType":"explain","placementId":"` + placed.ID + `"}`})["E"]
		fs := frames(t, r, 2)
		if id := column(t, fs[0], "Decision", data.FieldTypeString, "").At(0); id != placed.ID {
			t.Errorf("decision %q, want %q", id, placed.ID)
		}
		if o := column(t, fs[0], "Outcome", data.FieldTypeString, "").At(0); o != string(placed.Outcome) {
			t.Errorf("outcome %q, want %q", o, placed.Outcome)
		}
		if n := column(t, fs[0], "Evaluated", data.FieldTypeInt64, "").At(0).(int64); int(n) != placed.Evaluated {
			t.Errorf("evaluated %d, want %d", n, placed.Evaluated)
		}
		cands := fs[1]
		column(t, cands, "Score", data.FieldTypeFloat64, datasource.UnitFraction)
		chosen := column(t, cands, "Chosen", data.FieldTypeBool, "")
		nodes := column(t, cands, "Node", data.FieldTypeString, "")
		var got []string
		for i := 0; i < cands.Rows(); i++ {
			if chosen.At(i).(bool) {
				got = append(got, nodes.At(i).(string))
			}
		}
		var want []string
		for _, a := range placed.Assignments {
			want = append(want, a.Node)
		}
		if strings.Join(got, ",") != strings.Join(want, ",") || len(want) != 1 {
			t.Errorf("chosen candidates %q, want the decision's one node %q", got, want)
		}
		if cands.Rows() != 2 || placed.Evaluated != 2 {
			t.Errorf("%d candidate rows, %d evaluated; want both nodes\n%s", cands.Rows(), placed.Evaluated, dump(cands))
		}
		if v := column(t, cands, "Verdicts", data.FieldTypeString, "").At(0).(string); v == "" {
			t.Errorf("a candidate without its filters' verdicts\n%s", dump(cands))
		}
		r = query(t, ds, from, to, map[string]string{"E": `{"queryType":"explain","placementId":"no-such-decision"}`})["E"]
		wantError(t, "unknown decision", r, backend.StatusNotFound, "no decision", "no-such-decision")
	})

	t.Run("fairshare", func(t *testing.T) {
		r := query(t, ds, from, to, map[string]string{"F": `{"queryType":"fairshare"}`})["F"]
		f := frames(t, r, 1)[0]
		acct, user := column(t, f, "Account", data.FieldTypeString, ""), column(t, f, "User", data.FieldTypeString, "")
		shares := column(t, f, "Shares", data.FieldTypeFloat64, datasource.UnitFraction)
		column(t, f, "Charged", data.FieldTypeFloat64, datasource.UnitGPUHours)
		column(t, f, "Classic factor", data.FieldTypeNullableFloat64, "")
		// Shares 3:1 → vision 0.75, other 0.25 of the machine.
		want := map[string]float64{"vision": 0.75, "other": 0.25}
		for i := 0; i < f.Rows(); i++ {
			if w, ok := want[acct.At(i).(string)]; ok && user.At(i) == "" {
				if !near(shares.At(i).(float64), w) {
					t.Errorf("%s: shares %g, want %g", acct.At(i), shares.At(i), w)
				}
				delete(want, acct.At(i).(string))
			}
		}
		if len(want) > 0 {
			t.Errorf("accounts missing from the standing: %v\n%s", want, dump(f))
		}
	})

	t.Run("dashboards", func(t *testing.T) {
		// Every query of the gpuwatch data source in gpuwatch's dashboards
		// parses, and answers rows on the job's data.
		files, err := filepath.Glob("../dashboards/*.json")
		if err != nil || len(files) == 0 {
			t.Fatalf("no ../dashboards/*.json: %v", err)
		}
		n := 0
		for _, file := range files {
			for _, pq := range pluginQueries(t, file) {
				n++
				if _, err := datasource.ParseQuery(pq.raw, ""); err != nil {
					t.Errorf("%s: panel %q: %v", file, pq.panel, err)
					continue
				}
				// As the front end sends it: the variables at All (no
				// filter), and the job's account and user picked.
				for _, pick := range []map[string]string{{}, {"account": "vision", "user": "alice"}} {
					raw := interpolateLists(t, pq.raw, pick)
					r := query(t, ds, t0, t0.Add(2*time.Hour), map[string]string{"A": string(raw)})["A"]
					if r.Error != nil || len(r.Frames) == 0 || r.Frames[0].Rows() == 0 {
						t.Errorf("%s: panel %q: %s: %v, %d frames", file, pq.panel, raw, r.Error, len(r.Frames))
						continue
					}
					m := r.Frames[0].Meta
					filtered := m != nil && slices.ContainsFunc(m.Notices, func(n data.Notice) bool { return strings.HasPrefix(n.Text, "only allocations of") })
					if want := len(pick) > 0 && strings.Contains(string(pq.raw), "${account"); filtered != want {
						t.Errorf("%s: panel %q: %s: filtered %v, want %v", file, pq.panel, raw, filtered, want)
					}
				}
			}
		}
		if n == 0 {
			t.Errorf("no dashboard uses the gpuwatch data source")
		}
	})

	t.Run("errors", func(t *testing.T) {
		rs := query(t, ds, from, to, map[string]string{
			"ok":       `{"queryType":"jobstats","jobId":"4242"}`,
			"unknown":  `{"queryType":"gpu-temperatures"}`,
			"none":     `{}`,
			"nojob":    `{"queryType":"jobstats","jobId":"31337"}`,
			"badjob":   `{"queryType":"jobstats","jobId":"a/b/c"}`,
			"emptyjob": `{"queryType":"jobstats"}`,
			"badby":    `{"queryType":"report","by":"team"}`,
			"badidle":  `{"queryType":"report","idleBelow":"150%"}`,
			"badtable": `{"queryType":"faults","faults":"worst"}`,
			"notjson":  `{"queryType":"report"`,
		})
		frames(t, rs["ok"], 2) // the good query answers beside the bad ones
		wantError(t, "unknown type", rs["unknown"], backend.StatusBadRequest, `unknown query type "gpu-temperatures"`, "report, jobstats, faults")
		wantError(t, "no type", rs["none"], backend.StatusBadRequest, "no query type")
		wantError(t, "unknown job", rs["nojob"], backend.StatusNotFound, "31337")
		wantError(t, "bad job id", rs["badjob"], backend.StatusBadRequest, `job id "a/b/c"`)
		wantError(t, "no job id", rs["emptyjob"], backend.StatusBadRequest, "needs a job id")
		wantError(t, "bad grouping", rs["badby"], backend.StatusBadRequest, `unknown grouping "team"`)
		wantError(t, "bad threshold", rs["badidle"], backend.StatusBadRequest, "idle below")
		wantError(t, "bad faults table", rs["badtable"], backend.StatusBadRequest, `unknown faults table "worst"`)
		if r := rs["notjson"]; r.Error == nil || r.Status != backend.StatusBadRequest {
			t.Errorf("a query that is not JSON: %+v", r)
		}
	})
}

// TestTokens: a read token is accepted; a wrong token, no token and a server
// that does not answer are each a clear per-query error and a failed health
// check, never a crash.
func TestTokens(t *testing.T) {
	t0 := time.Now().Add(-3 * time.Hour).Truncate(time.Minute)
	g := startServer(t, nil)
	g.write(t, jobstatstest.Samples(t0))
	from, to := t0, t0.Add(2*time.Hour)
	q := map[string]string{"A": `{"queryType":"report","by":"account"}`}

	ok := newDatasource(t, g.ts.URL, readSecret)
	h, err := ok.CheckHealth(context.Background(), &backend.CheckHealthRequest{})
	if err != nil || h.Status != backend.HealthStatusOk || !strings.Contains(h.Message, "accepts the data source's token") {
		t.Errorf("health with the read token: %+v, %v", h, err)
	}
	frames(t, query(t, ok, from, to, q)["A"], 1)

	for _, c := range []struct {
		name, token, says string
	}{{"wrong token", "not-the-secret", "refused the data source's token"}, {"no token", "", "wants a token"}} {
		ds := newDatasource(t, g.ts.URL, c.token)
		wantError(t, c.name, query(t, ds, from, to, q)["A"], backend.StatusUnauthorized, c.says, "401", "read-role token")
		h, err := ds.CheckHealth(context.Background(), &backend.CheckHealthRequest{})
		if err != nil || h.Status != backend.HealthStatusError || !strings.Contains(h.Message, c.says) {
			t.Errorf("%s: health %+v, %v", c.name, h, err)
		}
	}
	// A server without a token file takes reads from anyone.
	open := startServer(t, func(o *server.Options) { o.Auth = auth.Options{} })
	h, err = newDatasource(t, open.ts.URL, "").CheckHealth(context.Background(), &backend.CheckHealthRequest{})
	if err != nil || h.Status != backend.HealthStatusOk || !strings.Contains(h.Message, "takes reads without a token") {
		t.Errorf("health against a server without a token file: %+v, %v", h, err)
	}

	// A server that does not answer: a port nobody listens on.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + l.Addr().String()
	l.Close()
	ds := newDatasource(t, dead, readSecret)
	wantError(t, "dead server", query(t, ds, from, to, q)["A"], backend.StatusBadGateway, "does not answer", dead)
	if h, err := ds.CheckHealth(context.Background(), &backend.CheckHealthRequest{}); err != nil || h.Status != backend.HealthStatusError || !strings.Contains(h.Message, "does not answer") {
		t.Errorf("dead server: health %+v, %v", h, err)
	}
	for _, s := range []backend.DataSourceInstanceSettings{{URL: ""}, {URL: "gpuwatch:9402"}, {URL: "http://x", JSONData: json.RawMessage(`{"timeoutSeconds":-1}`)},
		{URL: "https://x", DecryptedSecureJSONData: map[string]string{datasource.SecureTLSCACert: "not a certificate"}}} {
		if _, err := datasource.NewDatasource(context.Background(), s); err == nil {
			t.Errorf("settings %+v accepted", s)
		}
	}
}

// TestFaultsQueries: each faults table of faultstest's fleet, with the
// numbers its comment derives, on a server whose drain controller holds the
// fleet's audit log (faultstest.Audit); and that log as the drains query.
func TestFaultsQueries(t *testing.T) {
	t0 := time.Now().Add(-50 * time.Hour).Truncate(time.Hour)
	g := startServer(t, func(o *server.Options) {
		dir := filepath.Join(o.StateDir, "drain")
		var log bytes.Buffer
		for _, r := range faultstest.Audit(t0) {
			b, err := json.Marshal(r)
			if err != nil {
				t.Fatal(err)
			}
			log.Write(append(b, '\n'))
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, drain.AuditFileName), log.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		o.Drain = &server.DrainOptions{Actuator: drain.NewLogActuator(io.Discard), ActuatorName: "log"}
	})
	g.write(t, faultstest.Fleet(t0))
	ds := newDatasource(t, g.ts.URL, readSecret)
	from, to := t0, t0.Add(faultstest.Window)
	rs := query(t, ds, from, to, map[string]string{
		"code":   `{"queryType":"faults"}`,
		"action": `{"queryType":"faults","faults":"xid_by_action"}`,
		"soon":   `{"queryType":"faults","faults":"drain_soon"}`,
		"mtbf":   `{"queryType":"faults","faults":"mtbf_by_model"}`,
		"ib":     `{"queryType":"faults","faults":"infiniband"}`,
		"nvlink": `{"queryType":"faults","faults":"nvlink"}`,
		"lemons": `{"queryType":"faults","faults":"lemons"}`,
		"drains": `{"queryType":"drains"}`,
	})
	pairs := func(f *data.Frame, key, val string) string {
		k, v := f.Fields[0], f.Fields[1]
		if f.Fields[0].Name != key || f.Fields[1].Name != val {
			t.Errorf("frame %q fields %q %q, want %q %q", f.Name, k.Name, v.Name, key, val)
		}
		var out []string
		for i := 0; i < f.Rows(); i++ {
			out = append(out, k.At(i).(string)+"="+strconv.FormatFloat(num(v.At(i)), 'f', -1, 64))
		}
		return strings.Join(out, " ")
	}
	code := frames(t, rs["code"], 1)[0]
	column(t, code, "Count", data.FieldTypeFloat64, "")
	if got := pairs(code, "Xid", "Count"); got != "13=5 79=3 31=2 48=1" {
		t.Errorf("Xids by code %q, want 13=5 79=3 31=2 48=1", got)
	}
	if got := pairs(frames(t, rs["action"], 1)[0], "Action", "Count"); got != "RESTART_APP=7 RESET_GPU=3 DRAIN_AND_RESET=1" {
		t.Errorf("Xids by action %q", got)
	}
	soon := frames(t, rs["soon"], 1)[0]
	if got := strings.Join(strs(column(t, soon, "GPU", data.FieldTypeString, "")), " "); got != "GPU-b0 GPU-c1 GPU-a0 GPU-d1" {
		t.Errorf("drain soon %q, want GPU-b0 GPU-c1 GPU-a0 GPU-d1", got)
	}
	htl := column(t, soon, "Hours to limit", data.FieldTypeNullableFloat64, datasource.UnitHours)
	if h := num(htl.At(row(t, soon, "GPU", "GPU-c1"))); !near(h, 24) {
		t.Errorf("c1 hours to limit %g, want 24", h)
	}
	if h := num(htl.At(row(t, soon, "GPU", "GPU-a0"))); !near(h, 149.76) {
		t.Errorf("a0 hours to limit %g, want 149.76", h)
	}
	column(t, soon, "Of limit", data.FieldTypeFloat64, datasource.UnitFraction)
	mtbf := frames(t, rs["mtbf"], 1)[0]
	column(t, mtbf, "MTBF", data.FieldTypeNullableFloat64, datasource.UnitHours)
	fails := column(t, mtbf, "Failures", data.FieldTypeInt64, "")
	// node-a's two Xid 79 failures and node-b's three drains: 96 node-hours
	// over 5 failures.
	h100 := row(t, mtbf, "Model", faultstest.H100)
	if n := fails.At(h100).(int64); n != 5 {
		t.Errorf("H100 failures %d, want 5", n)
	}
	if m := num(column(t, mtbf, "MTBF", data.FieldTypeNullableFloat64, datasource.UnitHours).At(h100)); !near(m, 19.2) {
		t.Errorf("H100 MTBF %g h, want 19.2", m)
	}
	ib := frames(t, rs["ib"], 1)[0]
	if got := strings.Join(strs(column(t, ib, "Node", data.FieldTypeString, "")), " "); got != "node-a node-c node-b" {
		t.Errorf("InfiniBand ports by node %q, want node-a node-c node-b", got)
	}
	nv := frames(t, rs["nvlink"], 1)[0]
	if got := strings.Join(strs(column(t, nv, "GPU", data.FieldTypeString, "")), " "); got != "GPU-c0 GPU-a0" {
		t.Errorf("NVLinks %q, want GPU-c0 GPU-a0", got)
	}
	// node-b drained three times within the window (the drain before it
	// does not count): the one lemon.
	lemons := frames(t, rs["lemons"], 1)[0]
	if got := strings.Join(strs(column(t, lemons, "Node", data.FieldTypeString, "")), " "); got != "node-b" {
		t.Errorf("lemons %q, want node-b", got)
	}
	if n := column(t, lemons, "Drains", data.FieldTypeInt64, "").At(0); n != int64(3) {
		t.Errorf("node-b's drains %v, want 3", n)
	}
	column(t, lemons, "Last drain", data.FieldTypeNullableTime, "")
	// The audit log over the window: its eight records less the one a day
	// before.
	dr := frames(t, rs["drains"], 1)[0]
	if dr.Rows() != len(faultstest.Audit(t0))-1 {
		t.Errorf("%d audit records in the window, want %d\n%s", dr.Rows(), len(faultstest.Audit(t0))-1, dump(dr))
	}
}

// TestStragglersQuery: stragglerstest's known stragglers, a row per GPU and
// signal, and the job filter.
func TestStragglersQuery(t *testing.T) {
	t1 := time.Now().Add(-stragglerstest.Every).Truncate(stragglerstest.Every)
	t0 := t1.Add(-10 * time.Minute)
	g := startServer(t, nil)
	g.write(t, stragglerstest.Fleet(t0))
	ds := newDatasource(t, g.ts.URL, readSecret)
	rs := query(t, ds, t0, t1, map[string]string{
		"all": `{"queryType":"stragglers"}`,
		"e":   `{"queryType":"stragglers","jobId":"train-e"}`,
		"gap": `{"queryType":"stragglers","minGap":"150%"}`,
		// A pod's job id travels as one path segment (namespace%2Fpod).
		"pod": `{"queryType":"jobstats","jobId":"ml/healthy"}`,
		// train-a's GPU 3 is thermally throttled (stragglerstest.Fleet).
		"job": `{"queryType":"jobstats","jobId":"train-a"}`,
	})
	ja := frames(t, rs["job"], 2)[0]
	uuids, lag := column(t, ja, "UUID", data.FieldTypeString, ""), column(t, ja, "Straggler", data.FieldTypeString, "")
	for i := 0; i < ja.Rows(); i++ {
		u, l := uuids.At(i).(string), lag.At(i).(string)
		if want := u == "GPU-a3"; want != (l != "") || want && !strings.Contains(l, "% behind (hw_thermal_slowdown)") {
			t.Errorf("train-a %s: straggler %q; want GPU-a3 alone, behind with hw_thermal_slowdown", u, l)
		}
	}
	if h := strs(column(t, frames(t, rs["pod"], 2)[0], "Straggler", data.FieldTypeString, "")); strings.Join(h, "") != "" {
		t.Errorf("ml/healthy: stragglers %q, want none", h)
	}
	pod := frames(t, rs["pod"], 2)
	if n := pod[0].Rows(); n != 8 {
		t.Errorf("pod ml/healthy: %d GPUs, want 8", n)
	}
	if j := column(t, pod[1], "Job", data.FieldTypeString, "").At(0); j != "ml/healthy" {
		t.Errorf("pod job %q, want ml/healthy", j)
	}
	f := frames(t, rs["all"], 1)[0]
	jobs, gpus, sigs := column(t, f, "Job", data.FieldTypeString, ""), column(t, f, "GPU", data.FieldTypeString, ""), column(t, f, "Signal", data.FieldTypeString, "")
	column(t, f, "Lag", data.FieldTypeFloat64, datasource.UnitFraction)
	column(t, f, "Behind for", data.FieldTypeFloat64, datasource.UnitSeconds)
	got := map[string]bool{}
	for i := 0; i < f.Rows(); i++ {
		got[jobs.At(i).(string)+" "+gpus.At(i).(string)+" "+sigs.At(i).(string)] = true
	}
	want := map[string]bool{}
	for job, ss := range stragglerstest.Want {
		for _, s := range ss {
			parts := strings.Split(s, ":")
			for _, sig := range strings.Split(parts[1], ",") {
				want[job+" "+parts[0]+" "+sig] = true
			}
		}
	}
	if len(got) != len(want) {
		t.Errorf("%d straggler rows, want %d:\n%s", len(got), len(want), dump(f))
	}
	for k := range want {
		if !got[k] {
			t.Errorf("no row %q", k)
		}
	}
	e := frames(t, rs["e"], 1)[0]
	if got := strings.Join(strs(column(t, e, "GPU", data.FieldTypeString, "")), " "); got != "GPU-e2" {
		t.Errorf("train-e's stragglers %q, want GPU-e2", got)
	}
	wantError(t, "min gap over 100%", rs["gap"], backend.StatusBadRequest, "min gap")
}

// pluginQuery is a query of the gpuwatch data source in a dashboard.
type pluginQuery struct {
	panel string
	raw   json.RawMessage
}

// pluginQueries reads a dashboard's queries of the gpuwatch data source (its
// panels, rows' panels included).
func pluginQueries(t *testing.T, file string) []pluginQuery {
	t.Helper()
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	type panel struct {
		Title   string            `json:"title"`
		Panels  []json.RawMessage `json:"panels"`
		Targets []json.RawMessage `json:"targets"`
	}
	var d struct {
		Panels []json.RawMessage `json:"panels"`
	}
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	var out []pluginQuery
	var walk func([]json.RawMessage)
	walk = func(ps []json.RawMessage) {
		for _, r := range ps {
			var p panel
			if err := json.Unmarshal(r, &p); err != nil {
				t.Fatalf("%s: %v", file, err)
			}
			walk(p.Panels)
			for _, tg := range p.Targets {
				var ref struct {
					Datasource struct {
						Type string `json:"type"`
					} `json:"datasource"`
				}
				_ = json.Unmarshal(tg, &ref) // old dashboards name data sources by a string
				if ref.Datasource.Type == datasource.PluginID {
					out = append(out, pluginQuery{p.Title, tg})
				}
			}
		}
	}
	walk(d.Panels)
	return out
}

// interpolateLists replaces the template variables of a report query's
// lists as module.js does: a variable picked is its value, one not picked is
// at All, which sends no filter.
func interpolateLists(t *testing.T, raw json.RawMessage, picked map[string]string) json.RawMessage {
	t.Helper()
	var q map[string]any
	if err := json.Unmarshal(raw, &q); err != nil {
		t.Fatal(err)
	}
	varRE := regexp.MustCompile(`\$\{(\w+)(?::\w+)?\}|\$(\w+)`)
	for _, k := range []string{"account", "user", "namespace"} {
		s, ok := q[k].(string)
		if !ok {
			continue
		}
		all := false
		q[k] = varRE.ReplaceAllStringFunc(s, func(m string) string {
			g := varRE.FindStringSubmatch(m)
			v, ok := picked[g[1]+g[2]]
			all = all || !ok
			return v
		})
		if all {
			q[k] = ""
		}
	}
	out, err := json.Marshal(q)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func dump(f *data.Frame) string {
	s, err := f.StringTable(50, 20)
	if err != nil {
		return err.Error()
	}
	return s
}

// otherJob is job 555 of account other, user bob: one GPU (node-c) for the
// same two hours as jobstatstest's job, a sample a minute at 50 %.
func otherJob(t0 time.Time) []telemetry.Sample {
	var out []telemetry.Sample
	for k := range 120 {
		at := t0.Add(time.Duration(k) * time.Minute)
		out = append(out,
			telemetry.Sample{Name: telemetry.MetricGPUAllocationInfo, Time: at, Value: 1, Labels: telemetry.NewLabels(
				telemetry.LabelNode, "node-c", telemetry.LabelGPUIndex, "0", telemetry.LabelGPUUUID, "GPU-c0",
				telemetry.LabelJobID, "555", telemetry.LabelAccount, "other", telemetry.LabelUser, "bob")},
			telemetry.Sample{Name: telemetry.DCGMGPUUtil, Time: at, Value: 50, Labels: telemetry.NewLabels(
				telemetry.LabelNode, "node-c", telemetry.DCGMLabelHostname, "node-c", telemetry.DCGMLabelUUID, "GPU-c0", telemetry.DCGMLabelGPU, "0")})
	}
	return out
}

// TestReportFilter: the report query's account and user, as Grafana sends
// them after the front end replaced the variables (a comma-separated string,
// an array, All), through QueryData against a real server: only the kept
// accounts' and users' rows, and their totals, which are the unfiltered
// report's rows of those keys.
func TestReportFilter(t *testing.T) {
	t0 := time.Now().Add(-3 * time.Hour).Truncate(time.Minute)
	g := jobServer(t, t0)
	g.write(t, otherJob(t0))
	ds := newDatasource(t, g.ts.URL, readSecret)
	rs := query(t, ds, t0, t0.Add(2*time.Hour), map[string]string{
		"all":       `{"queryType":"report","by":"account","step":"1m"}`,
		"allvar":    `{"queryType":"report","by":"account","step":"1m","account":"$__all","user":""}`,
		"other":     `{"queryType":"report","by":"account","step":"1m","account":"other"}`,
		"both":      `{"queryType":"report","by":"account","step":"1m","account":"vision, other"}`,
		"alice":     `{"queryType":"report","by":"job","step":"1m","user":["alice"]}`,
		"otherbob":  `{"queryType":"report","by":"user","step":"1m","account":"vision,other","user":"bob"}`,
		"nobody":    `{"queryType":"report","by":"account","step":"1m","account":"nobody"}`,
		"emptyval":  `{"queryType":"report","by":"account","account":"vision,"}`,
		"notalist":  `{"queryType":"report","by":"account","user":{"name":"bob"}}`,
		"toolong":   `{"queryType":"report","by":"account","user":"` + strings.Repeat("b", 300) + `"}`,
		"jobs":      `{"queryType":"report","by":"job","step":"1m"}`,
		"otheruser": `{"queryType":"report","by":"user","step":"1m"}`,
	})
	type row struct {
		alloc float64
		fs    bool
	}
	rows := func(name, key string) (map[string]row, []string, *data.Frame) {
		t.Helper()
		f := frames(t, rs[name], 1)[0]
		keys := strs(column(t, f, key, data.FieldTypeString, ""))
		alloc := column(t, f, "Allocated", data.FieldTypeFloat64, datasource.UnitGPUHours)
		fs := column(t, f, "Fair-share factor", data.FieldTypeNullableFloat64, "")
		out := map[string]row{}
		for i, k := range keys {
			v, _ := fs.At(i).(*float64)
			out[k] = row{num(alloc.At(i)), v != nil}
		}
		return out, keys, f
	}
	all, allKeys, _ := rows("all", "Account")
	if strings.Join(allKeys, " ") != "vision other total" || !near(all["total"].alloc, all["vision"].alloc+all["other"].alloc) || all["other"].alloc <= 0 {
		t.Fatalf("unfiltered by account: %v %v", allKeys, all)
	}
	if _, keys, _ := rows("allvar", "Account"); strings.Join(keys, " ") != "vision other total" {
		t.Errorf("All: rows %v, want every account", keys)
	}
	for _, c := range []struct {
		name, key, want string
		total           float64
	}{
		{"other", "Account", "other total", all["other"].alloc},
		{"both", "Account", "vision other total", all["total"].alloc},
		{"otherbob", "User", "bob total", all["other"].alloc},
	} {
		got, keys, f := rows(c.name, c.key)
		if strings.Join(keys, " ") != c.want || !near(got["total"].alloc, c.total) {
			t.Errorf("%s: rows %v, total %g GPU-h; want %s, %g", c.name, keys, got["total"].alloc, c.want, c.total)
		}
		for k, r := range got {
			if k != "total" && c.key == "Account" && (!near(r.alloc, all[k].alloc) || r.fs != all[k].fs || !r.fs) {
				t.Errorf("%s: account %s %+v, unfiltered %+v (its fair-share standing too)", c.name, k, r, all[k])
			}
		}
		if f.Meta == nil || !slices.ContainsFunc(f.Meta.Notices, func(n data.Notice) bool { return strings.HasPrefix(n.Text, "only allocations of ") }) {
			t.Errorf("%s: no notice of the filter: %+v", c.name, f.Meta)
		}
	}
	jobs, _, _ := rows("jobs", "Job")
	if got, keys, _ := rows("alice", "Job"); strings.Join(keys, " ") != "4242 99 total" || !near(got["total"].alloc, all["vision"].alloc) || !near(got["4242"].alloc, jobs["4242"].alloc) {
		t.Errorf("user alice by job: rows %v %v, want 4242 99 total, vision's %g GPU-h", keys, got, all["vision"].alloc)
	}
	wantError(t, "no such account", rs["nobody"], backend.StatusNotFound, "account nobody")
	wantError(t, "an empty value", rs["emptyval"], backend.StatusBadRequest, "account: an empty value")
	wantError(t, "not a list", rs["notalist"], backend.StatusBadRequest, "user: want a comma-separated string or an array")
	wantError(t, "too long", rs["toolong"], backend.StatusBadRequest, "300 bytes, at most 256")
}
