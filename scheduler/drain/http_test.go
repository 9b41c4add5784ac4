package drain

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gpuwatch/gpuwatch/internal/auth"
)

// TestAPI drives the drain API through its routes: what each answers, the
// errors naming what was wrong, and the caller's identity from the context
// (the front door's) as the audit log's actor and as the bound of a health
// push.
func TestAPI(t *testing.T) {
	h := newHarness(t, nil)
	mux := http.NewServeMux()
	h.c.Register(mux, "/api/gpuwatch/v1/")
	ops := &auth.Identity{Name: "ops-cli", Role: auth.RoleOperate}
	agent := &auth.Identity{Name: "rack-7", Role: auth.RoleAgent, Nodes: []string{"node-7*"}}
	do := func(method, path string, id *auth.Identity, body any) (int, string) {
		t.Helper()
		var rd *bytes.Reader
		switch b := body.(type) {
		case nil:
			rd = bytes.NewReader(nil)
		case string:
			rd = bytes.NewReader([]byte(b))
		default:
			data, err := json.Marshal(b)
			if err != nil {
				t.Fatal(err)
			}
			rd = bytes.NewReader(data)
		}
		req := httptest.NewRequest(method, "/api/gpuwatch/v1"+path, rd)
		if id != nil {
			req = req.WithContext(auth.WithIdentity(req.Context(), id))
		}
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, req)
		return rec.Code, rec.Body.String()
	}
	for _, tc := range []struct {
		name, method, path string
		id                 *auth.Identity
		body               any
		code               int
		has                string
	}{
		{"report", "POST", "/health", agent, report("node-71", h.clk.now(), xid79("node-71", 2)), 202, ""},
		{"report for another rack", "POST", "/health", agent, report(n1, h.clk.now()), 403, "token rack-7 is bound to nodes node-7*"},
		{"report not json", "POST", "/health", nil, "{", 400, "health report: "},
		{"report without node", "POST", "/health", nil, `{"state":"healthy"}`, 400, "node is empty"},
		{"report bad node name", "POST", "/health", nil, `{"node":"a b"}`, 400, `node \"a b\": invalid node name`},
		{"report bad state", "POST", "/health", nil, `{"node":"node-72","state":"sideways"}`, 400, "health report: "},
		{"node", "GET", "/nodes/node-71", nil, nil, 200, `"node": "node-71"`},
		{"unknown node", "GET", "/nodes/node-99", nil, nil, 404, `node \"node-99\" has not reported`},
		{"nodes", "GET", "/nodes", nil, nil, 200, `"budget"`},
		{"exclusions", "GET", "/exclusions", nil, nil, 200, `"exclusions": [`},
		{"budget", "GET", "/budget", nil, nil, 200, `"limit"`},
		{"audit bad since", "GET", "/audit?since=yesterday", nil, nil, 400, `since \"yesterday\": want RFC 3339 time`},
		{"audit bad limit", "GET", "/audit?limit=-1", nil, nil, 400, `limit \"-1\": want a positive number`},
		{"manual unknown field", "POST", "/drain", ops, `{"node":"node-73","why":"fan"}`, 400, `request: unknown field \"why\"`},
		{"manual drain", "POST", "/drain", ops, ManualRequest{Node: "node-73", Reason: "bad fan", User: "alice"}, 202, `"manual": true`},
		{"manual resume of a bad name", "POST", "/resume", ops, ManualRequest{Node: "a b"}, 400, `invalid node name \"a b\"`},
		{"budget reset", "POST", "/budget/reset", ops, ManualRequest{}, 200, `"tripped": false`},
		{"wrong method", "GET", "/drain", nil, nil, 405, ""},
	} {
		code, body := do(tc.method, tc.path, tc.id, tc.body)
		if code != tc.code || !strings.Contains(body, tc.has) {
			t.Errorf("%s: %d %s, want %d with %q", tc.name, code, body, tc.code, tc.has)
		}
	}
	h.process()
	if st := h.state("node-71"); st.String() != "drained" {
		t.Errorf("node-71 after its Xid 79 report: %s, want drained", st)
	}
	if _, ok := h.c.Node(n1); ok {
		t.Errorf("the refused report of %s reached the controller", n1)
	}
	code, body := do("GET", "/audit?limit=100", nil, nil)
	if code != 200 || !strings.Contains(body, `"user": "ops-cli (as alice)"`) {
		t.Errorf("audit: %d, want the manual drain by \"ops-cli (as alice)\":\n%s", code, body)
	}
}
