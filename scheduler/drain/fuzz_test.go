package drain

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"github.com/gpuwatch/gpuwatch/telemetry/healthreport"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/gpuwatch/gpuwatch/telemetry"
)

// manualSeeds are requests as `gpuwatch drain|resume` and people send them, and
// the odd ones: line breaks that would split an audit line or a Slurm reason,
// invalid UTF-8, control and bidi characters, Slurm host lists, an owned prefix
// behind blanks.
var manualSeeds = []struct{ node, reason, user string }{
	{"gpu02", "replacing the fan tray (ticket 4711)", "alice"},
	{"node-07", "swap PSU", "bob"},
	{"gpu01", "line one\nline two\r\n{\"event\":\"manual\"}", "eve\n"},
	{"gpu01", "\xff\xfe not UTF-8 \xc3", "\x80"},
	{"gpu01", strings.Repeat("\x80", MaxReason+10), "x"},
	{"gpu01", strings.Repeat("é", MaxReason), "u"},
	{"gpu01", "\u202egnp.exe\u2028\u2029\u0085 tab\there", "mallory"},
	{"gpu01", " \t gpuwatch: looks owned", "x"},
	{"gpu01", "\u200bgpuwatch: zero-width owned", "x"},
	{"gpu[01-04]", "many", "x"},
	{"ALL", "every node", "x"},
	{"a b", "space", "x"},
	{"-h", "an option", "x"},
	{"node=x", "key=value", "x"},
	{"", "no node", "x"},
	{"gpu01", "", "x"},
	{"gpu01", "r", ""},
	{"gpu01/gpu3", "a GPU id", "x"},
	{strings.Repeat("n", 300), "long name", "x"},
}

// FuzzManualDrain: ManualDrain and ManualResume with any node, reason and user
// (as Go callers, the demo among them, pass them) either refuse with an error
// naming what was wrong, or store the request safely; see checkManual.
func FuzzManualDrain(f *testing.F) {
	for _, s := range manualSeeds {
		f.Add(s.node, s.reason, s.user, false)
	}
	f.Add("gpu01", "", "alice", true)
	f.Add("gpu01\n", "", "alice", true)
	f.Fuzz(func(t *testing.T, node, reason, user string, resume bool) {
		checkManual(t, node, reason, user, resume)
	})
}

// manualBody is the body of POST /api/gpuwatch/v1/drain and /resume, decoded as
// internal/server decodes it (one JSON object, a missing user is "unknown").
type manualBody struct {
	Node   string `json:"node"`
	Reason string `json:"reason"`
	User   string `json:"user"`
}

// FuzzManualRequestJSON: the manual drain and resume request bodies, decoded the
// way the server's handler decodes them, then handed to the controller: JSON
// escapes produce every odd character a raw string can (\u0000, lone
// surrogates, \u2028), and the outcome must be the same as for FuzzManualDrain.
func FuzzManualRequestJSON(f *testing.F) {
	for _, s := range manualSeeds {
		b, _ := json.Marshal(manualBody{s.node, s.reason, s.user})
		f.Add(b, false)
	}
	f.Add([]byte(`{"node": "gpu03", "user": "ops"}`), true)
	f.Add([]byte(`{"node": "gpu03", "reason": "a\u0000b\ud800c\u2028d", "user": "\u001b[31mred"}`), false)
	f.Add([]byte(`{"node": "gpu03", "reason": "x"}`), false)
	f.Add([]byte(`{"node": 3}`), false)
	f.Fuzz(func(t *testing.T, body []byte, resume bool) {
		var m manualBody
		if err := json.NewDecoder(bytes.NewReader(body)).Decode(&m); err != nil {
			return // the handler answers 400 with the decoder's error
		}
		if m.User == "" {
			m.User = "unknown"
		}
		checkManual(t, m.Node, m.Reason, m.User, resume)
	})
}

// checkManual runs one manual request on a fresh controller and checks:
//   - a refused request's error says which request and names the field (node,
//     reason or user) that was wrong, and changes nothing: no node tracked, no
//     audit record;
//   - an accepted one names a node the way gpuwatch names nodes (no blanks,
//     quotes, slashes, host-list or key=value syntax), and its reason and user as
//     stored are one line of valid UTF-8 without control characters, the reason
//     at most MaxReason bytes and not one automation would take as its own;
//   - the actuator is handed exactly the stored reason;
//   - every line of the audit log decodes, one record per line, and the manual
//     record carries what the node's status shows;
//   - after a restart the node's status is what it was: what was stored is what
//     was persisted.
func checkManual(t *testing.T, node, reason, user string, resume bool) {
	dir, err := os.MkdirTemp(fuzzTmp(), "manual-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	clk := newClock()
	act := newFake(clk.now)
	act.manual = true
	c, err := New(Options{Dir: dir, Actuator: act, Clock: clk.now})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { c.audit.close() }()
	what := "manual drain"
	if resume {
		what = "manual resume"
		err = c.ManualResume(node, reason, user)
	} else {
		err = c.ManualDrain(node, reason, user)
	}
	if err != nil {
		msg := err.Error()
		if !strings.HasPrefix(msg, what) || !containsAny(msg, "node", "reason", "user") {
			t.Fatalf("%s(%q, %q, %q) refused with %q: want it to say %q and name the field", what, node, reason, user, msg, what)
		}
		if !utf8.ValidString(msg) || strings.ContainsAny(msg, "\n\r") {
			t.Fatalf("error %q is not one line of UTF-8", msg)
		}
		if len(c.Nodes()) != 0 {
			t.Fatalf("refused request left nodes behind: %+v", c.Nodes())
		}
		if recs, skipped := auditLines(t, dir); len(recs) != 0 || skipped != 0 {
			t.Fatalf("refused request audited: %+v", recs)
		}
		return
	}
	if _, err := telemetry.ParseNodeID(node); err != nil || strings.ContainsAny(node, ",[]=") || strings.HasPrefix(node, "-") {
		t.Fatalf("%s accepted node name %q", what, node)
	}
	before, ok := c.Node(node)
	if !ok {
		t.Fatalf("%s of %q accepted, node unknown", what, node)
	}
	checkText(t, "user", before.User, maxUser)
	if resume {
		if before.Pending == nil || before.Pending.Action != kindResume {
			t.Fatalf("no resume pending: %+v", before)
		}
	} else {
		checkText(t, "reason", before.Reason, MaxReason)
		if before.Reason == "" || Owned(before.Reason) {
			t.Fatalf("stored reason %q is empty or owned (from %q)", before.Reason, reason)
		}
		if !before.Manual || before.User == "" {
			t.Fatalf("stored %+v", before)
		}
	}
	c.Process(context.Background())
	act.mu.Lock()
	calls := append([]call(nil), act.calls...)
	act.mu.Unlock()
	if !resume && (len(calls) != 1 || calls[0].Method != "drain" || calls[0].Node != node || calls[0].Reason != before.Reason) {
		t.Fatalf("actuator calls %+v, want one drain of %q with %q", calls, node, before.Reason)
	}
	recs, skipped := auditLines(t, dir)
	if skipped != 0 {
		t.Fatalf("%d audit lines do not decode", skipped)
	}
	manual := 0
	for _, r := range recs {
		if r.Event == "manual" {
			manual++
			checkText(t, "user", r.User, maxUser)
			if r.Node != node || r.User == "" || (!resume && (r.User != before.User || r.Reason != before.Reason)) {
				t.Fatalf("audit record %+v does not carry what was stored %+v", r, before)
			}
		}
	}
	if manual != 1 {
		t.Fatalf("%d manual records, want 1", manual)
	}
	after, _ := c.Node(node)
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	c2, err := New(Options{Dir: dir, Actuator: act, Clock: clk.now})
	if err != nil {
		t.Fatal(err)
	}
	defer c2.audit.close()
	again, _ := c2.Node(node)
	a, _ := json.Marshal(after)
	b, _ := json.Marshal(again)
	if !bytes.Equal(a, b) {
		t.Fatalf("status changed across a restart:\n %s\n %s", a, b)
	}
}

// checkText fails unless s is one line of valid UTF-8 without control or format
// characters, at most max bytes.
func checkText(t *testing.T, field, s string, max int) {
	t.Helper()
	if !utf8.ValidString(s) || len(s) > max {
		t.Fatalf("stored %s %q: invalid UTF-8 or longer than %d bytes", field, s, max)
	}
	for _, r := range s {
		if unicode.IsControl(r) || unicode.Is(unicode.Cf, r) || (unicode.IsSpace(r) && r != ' ') {
			t.Fatalf("stored %s %q holds %U", field, s, r)
		}
	}
	if s != strings.TrimSpace(s) || strings.Contains(s, "  ") {
		t.Fatalf("stored %s %q: blanks not folded", field, s)
	}
}

// auditLines decodes the audit log line by line, strictly: it returns the
// records and how many lines did not decode.
func auditLines(t testing.TB, dir string) (recs []AuditRecord, bad int) {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, AuditFileName))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	br := bufio.NewReader(f)
	for {
		line, err := br.ReadBytes('\n')
		if len(line) > 0 {
			var r AuditRecord
			dec := json.NewDecoder(bytes.NewReader(line))
			dec.DisallowUnknownFields()
			if dec.Decode(&r) != nil || dec.More() || !bytes.HasSuffix(line, []byte("\n")) {
				bad++
			} else {
				recs = append(recs, r)
			}
		}
		if err == io.EOF {
			return recs, bad
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

func containsAny(s string, subs ...string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

// fuzzTmp is tmpfs where there is one: every fuzz input opens a controller,
// whose writes are fsync'd.
func fuzzTmp() string {
	if st, err := os.Stat("/dev/shm"); err == nil && st.IsDir() {
		return "/dev/shm"
	}
	return os.TempDir()
}

// FuzzObserveReport: any health report body, decoded and checked as the
// server's POST /health handler does, then observed three times ten seconds
// apart (past the default hysteresis) and actuated: nothing panics; a node name
// that could not name one node is ignored; every reason handed to the actuator
// is gpuwatch's, one line, at most MaxReason bytes; every audit line decodes;
// node states are valid; and a restart restores what was there.
func FuzzObserveReport(f *testing.F) {
	for _, r := range []healthreport.Report{
		report("gpu01", t0),
		report("gpu01", t0, xid79("gpu01", 3)),
		report("gpu02", t0, dbe("gpu02", 0), sbe("gpu02", 1)),
		report("gpu03", t0, ibDown("gpu03")),
		reportN("gpu04", t0, 7),
		report("gpu[01-04]", t0, xid79("gpu[01-04]", 0)),
	} {
		b, err := json.Marshal(r)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(`{"node":"n","state":1,"gpus":[{"index":-1,"uuid":"\n","conditions":[{"kind":"xid","target":{"scope":"gpu","node":"n","gpu":-1},"severity":4,"action":"RESTART_BM","evidence":{"xid":"79\n"}}]}]}`))
	f.Add([]byte(`{"node":"n","state":0,"conditions":[{"kind":"ib-down","target":{"scope":"ib_port","node":"n","ib_device":"mlx5_0\u2028x","ib_port":1},"severity":3,"action":"CHECK_MECHANICALS"}]}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		var rep healthreport.Report
		if json.NewDecoder(bytes.NewReader(body)).Decode(&rep) != nil || rep.Node == "" || !rep.State.Valid() {
			return // the handler answers 400
		}
		dir, err := os.MkdirTemp(fuzzTmp(), "observe-")
		if err != nil {
			t.Fatal(err)
		}
		defer os.RemoveAll(dir)
		clk := newClock()
		act := newFake(clk.now)
		pol := DefaultPolicy()
		pol.Budget = Budget{Count: 1, Window: time.Hour}
		c, err := New(Options{Dir: dir, Policy: pol, Actuator: act, Clock: clk.now})
		if err != nil {
			t.Fatal(err)
		}
		defer func() { c.audit.close() }()
		for range 3 {
			c.Observe(rep)
			c.Process(context.Background())
			clk.add(10 * time.Second)
		}
		nodes := c.Nodes()
		if CheckNodeName(rep.Node) != nil {
			if len(nodes) != 0 {
				t.Fatalf("report from %q observed", rep.Node)
			}
			return
		}
		for _, n := range nodes {
			if !n.State.Valid() {
				t.Fatalf("node %s in state %d", n.Node, n.State)
			}
		}
		act.mu.Lock()
		calls := append([]call(nil), act.calls...)
		act.mu.Unlock()
		for _, cl := range calls {
			if cl.Node != rep.Node {
				t.Fatalf("actuated %q on a report from %q", cl.Node, rep.Node)
			}
			if cl.Method == "drain" || cl.Method == "reboot" {
				if !Owned(cl.Reason) {
					t.Fatalf("reason %q is not gpuwatch's", cl.Reason)
				}
				checkText(t, "reason", cl.Reason, MaxReason)
			}
		}
		if _, bad := auditLines(t, dir); bad != 0 {
			t.Fatalf("%d audit lines do not decode", bad)
		}
		before, _ := json.Marshal(struct {
			N []NodeStatus
			E []Exclusion
			B BudgetStatus
		}{nodes, c.Exclusions(), c.Budget()})
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
		c2, err := New(Options{Dir: dir, Policy: pol, Actuator: act, Clock: clk.now})
		if err != nil {
			t.Fatal(err)
		}
		defer c2.audit.close()
		after, _ := json.Marshal(struct {
			N []NodeStatus
			E []Exclusion
			B BudgetStatus
		}{c2.Nodes(), c2.Exclusions(), c2.Budget()})
		if !bytes.Equal(before, after) {
			t.Fatalf("restart changed the controller's view:\n %s\n %s", before, after)
		}
	})
}
