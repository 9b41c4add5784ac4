package datasource

import (
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/analyzer/faults"
	"github.com/gpuwatch/gpuwatch/analyzer/jobstats"
	"github.com/gpuwatch/gpuwatch/analyzer/report"
	"github.com/gpuwatch/gpuwatch/analyzer/stragglers"
)

var (
	testTo   = time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	testFrom = testTo.Add(-6 * time.Hour)
)

// TestRequest: each query becomes the call the server's API documents, with
// the panel's time range (or the window ending where it ends).
func TestRequest(t *testing.T) {
	for _, c := range []struct {
		name, json, path string
		values           url.Values
	}{
		{"report", `{"queryType":"report","by":"user","idleBelow":"10%","idleFor":"1h","step":"5m","refId":"A","datasource":{"type":"gpuwatch-datasource"}}`,
			"/report", url.Values{"from": {"2026-11-25T06:00:00Z"}, "to": {"2026-11-25T12:00:00Z"}, "by": {"user"}, "idle_below": {"10%"}, "idle_for": {"1h"}, "step": {"5m"}}},
		{"report of accounts and users, comma-separated", `{"queryType":"report","by":"job","account":"nlp, vision","user":"bob"}`,
			"/report", url.Values{"from": {"2026-11-25T06:00:00Z"}, "to": {"2026-11-25T12:00:00Z"}, "by": {"job"}, "account": {"nlp", "vision"}, "user": {"bob"}}},
		{"report of accounts, an array; namespace", `{"queryType":"report","account":["a,b","c"],"namespace":"ml"}`,
			"/report", url.Values{"from": {"2026-11-25T06:00:00Z"}, "to": {"2026-11-25T12:00:00Z"}, "account": {"a,b", "c"}, "namespace": {"ml"}}},
		{"report of All, and of nothing typed", `{"queryType":"report","account":"$__all","user":"","namespace":[]}`,
			"/report", url.Values{"from": {"2026-11-25T06:00:00Z"}, "to": {"2026-11-25T12:00:00Z"}}},
		{"report over the last week", `{"queryType":"report","window":"7d"}`,
			"/report", url.Values{"from": {"2026-11-18T12:00:00Z"}, "to": {"2026-11-25T12:00:00Z"}}},
		{"a pod's job stats", `{"queryType":"jobstats","jobId":" ml/trainer-0 "}`,
			"/jobs/ml%2Ftrainer-0", url.Values{"from": {"2026-11-25T06:00:00Z"}, "to": {"2026-11-25T12:00:00Z"}}},
		{"faults", `{"queryType":"faults","faults":"lemons"}`,
			"/faults", url.Values{"from": {"2026-11-25T06:00:00Z"}, "to": {"2026-11-25T12:00:00Z"}}},
		{"stragglers of a job", `{"queryType":"stragglers","jobId":"77","minGap":"20%","minDuration":"5m"}`,
			"/stragglers", url.Values{"from": {"2026-11-25T06:00:00Z"}, "to": {"2026-11-25T12:00:00Z"}, "job_id": {"77"}, "min_gap": {"20%"}, "min_duration": {"5m"}}},
		{"explain", `{"queryType":"explain","placementId":"d-42"}`, "/explain/d-42", nil},
		{"drains", `{"queryType":"drains","limit":50}`, "/audit", url.Values{"since": {"2026-11-25T06:00:00Z"}, "limit": {"50"}}},
		{"fair share", `{"queryType":"fairshare"}`, "/fairshare", nil},
	} {
		q, err := ParseQuery([]byte(c.json), "")
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		got, err := q.request(testFrom, testTo)
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if got.Path != c.path || got.Values.Encode() != c.values.Encode() {
			t.Errorf("%s: %s?%s, want %s?%s", c.name, got.Path, got.Values.Encode(), c.path, c.values.Encode())
		}
	}
}

// TestParseQueryErrors: what is wrong, in the query editor's words.
func TestParseQueryErrors(t *testing.T) {
	for _, c := range []struct{ json, queryType, want string }{
		{`{}`, "", "no query type: choose one of report, jobstats, faults, stragglers, explain, drains, fairshare"},
		{`{"queryType":"metrics"}`, "", `unknown query type "metrics"`},
		{`{"queryType":"report"}`, "nodes", `unknown query type "nodes"`}, // Grafana's own copy wins
		{`{"queryType":"report","by":"team"}`, "", `group by: unknown grouping "team": want one of account, user, job, namespace, node, model`},
		{`{"queryType":"report","window":"forever"}`, "", `window "forever": want a positive duration such as 24h or 7d`},
		{`{"queryType":"report","window":"-1d"}`, "", `window "-1d"`},
		{`{"queryType":"jobstats"}`, "", "jobstats needs a job id"},
		{`{"queryType":"jobstats","jobId":"ns/pod/x"}`, "", `job id "ns/pod/x"`},
		{`{"queryType":"stragglers","jobId":"/x"}`, "", `job id "/x"`},
		{`{"queryType":"faults","faults":"worst"}`, "", `unknown faults table "worst"`},
		{`{"queryType":"jobstats","jobId":".."}`, "", `job id ".."`},
		{`{"queryType":"jobstats","jobId":"ns/.."}`, "", `job id "ns/.."`},
		{`{"queryType":"explain"}`, "", "explain needs a placement decision id"},
		{`{"queryType":"explain","placementId":"."}`, "", `placement id "."`},
		{`{"queryType":"explain","placementId":"../audit"}`, "", `placement id "../audit"`},
		{`{"queryType":"drains","limit":-3}`, "", "limit -3"},
		{`{"queryType":"report","by":7}`, "", "cannot read the query"},
		{`{"queryType":"report","account":"nlp,,vision"}`, "", "account: an empty value"},
		{`{"queryType":"report","user":["bob",""]}`, "", "user: an empty value"},
		{`{"queryType":"report","user":7}`, "", "user: want a comma-separated string or an array of strings, got 7"},
		{`{"queryType":"report","namespace":{"a":1}}`, "", "namespace: want"},
		{`[`, "", "cannot read the query"},
	} {
		_, err := ParseQuery([]byte(c.json), c.queryType)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s (%q): error %v, want %q", c.json, c.queryType, err, c.want)
		}
	}
	// Values only the time range can judge are refused by the analyzer's
	// own parsers before anything is sent, named as the editor names them.
	for _, c := range []struct{ json, want string }{
		{`{"queryType":"report","idleBelow":"150%"}`, "idle below"},
		{`{"queryType":"report","step":"fast"}`, "step"},
		{`{"queryType":"jobstats","jobId":"1","idleFor":"-5m"}`, "idle for"},
		{`{"queryType":"stragglers","minDuration":"soon"}`, "min duration"},
	} {
		q, err := ParseQuery([]byte(c.json), "")
		if err != nil {
			t.Errorf("%s: %v", c.json, err)
			continue
		}
		if _, err := q.request(testFrom, testTo); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one naming %q", c.json, err, c.want)
		}
	}
	q, _ := ParseQuery([]byte(`{"queryType":"report"}`), "")
	if _, err := q.request(testTo, testFrom); err == nil || !strings.Contains(err.Error(), "empty or reversed") {
		t.Errorf("a reversed time range: %v", err)
	}
}

// FuzzParseQuery: no query JSON makes the parser or the request builder
// panic, and a query both accept is one the server's own parsers accept,
// on a path under the API with nothing of the query escaping into it.
func FuzzParseQuery(f *testing.F) {
	for _, s := range []string{
		`{"queryType":"report","by":"account","idleBelow":"5%","idleFor":"30m","step":"1m"}`,
		`{"queryType":"jobstats","jobId":"ml/pod-0","window":"7d"}`,
		`{"queryType":"faults","faults":"drain_soon"}`,
		`{"queryType":"stragglers","jobId":"4242","minGap":"0.1","minDuration":"2m"}`,
		`{"queryType":"explain","placementId":"d-1"}`,
		`{"queryType":"drains","limit":10}`,
		`{"queryType":"fairshare","refId":"A","hide":false}`,
		`{"queryType":"jobstats","jobId":"%2e%2e"}`, `{}`, `null`, ``,
		`{"queryType":"report","account":"nlp,vision","user":["bob"],"namespace":"$__all"}`, `{"queryType":"report","user":",x"}`,
	} {
		f.Add([]byte(s), "")
	}
	f.Add([]byte(`{"by":"job"}`), "report")
	f.Fuzz(func(t *testing.T, data []byte, queryType string) {
		q, err := ParseQuery(data, queryType)
		if err != nil {
			return
		}
		c, err := q.request(testFrom, testTo)
		if err != nil {
			return
		}
		u, err := url.Parse("http://gpuwatch:9402" + APIPrefix + c.Path + "?" + c.Values.Encode())
		if err != nil {
			t.Fatalf("%q: the request's URL does not parse: %v", data, err)
		}
		endpoint := map[string]string{TypeReport: "/report", TypeJobStats: "/jobs/", TypeFaults: "/faults", TypeStragglers: "/stragglers",
			TypeExplain: "/explain/", TypeDrains: "/audit", TypeFairShare: "/fairshare"}[q.QueryType]
		rest, ok := strings.CutPrefix(u.EscapedPath(), APIPrefix+endpoint)
		if u.Host != "gpuwatch:9402" || !ok || strings.Contains(rest, "/") || (rest != "") != strings.HasSuffix(endpoint, "/") {
			t.Fatalf("%q: request %s leaves its endpoint", data, u)
		}
		if id, _ := url.PathUnescape(rest); rest != "" && id != q.JobID && id != q.PlacementID {
			t.Fatalf("%q: the id travels as %q", data, id)
		}
		now := testTo
		name := func(p string) string { return p }
		switch q.QueryType {
		case TypeReport:
			var o report.Options
			o, err = report.ParseQuery(u.Query(), now)
			if err == nil && (fmt.Sprint(o.Filter.Accounts) != fmt.Sprint([]string(q.Account)) || fmt.Sprint(o.Filter.Users) != fmt.Sprint([]string(q.User)) ||
				fmt.Sprint(o.Filter.Namespaces) != fmt.Sprint([]string(q.Namespace))) {
				t.Fatalf("%q: the filter %+v travels as %+v", data, q, o.Filter)
			}
		case TypeJobStats:
			_, err = jobstats.ParseQuery(q.JobID, u.Query(), now, name)
		case TypeFaults:
			_, err = faults.ParseQuery(u.Query(), now, name)
		case TypeStragglers:
			_, err = stragglers.ParseQuery(u.Query(), now, name)
		}
		if err != nil {
			t.Fatalf("%q: the server would refuse %s: %v", data, u, err)
		}
	})
}
