package ui_test

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/gpuwatch/gpuwatch/test/syncbuf"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/gpuwatch/gpuwatch/internal/demo"
	"github.com/gpuwatch/gpuwatch/test/browser"
)

// storyRun is testdata/story.yaml played by `gpuwatch demo`'s machinery on
// eight simulated HGX H100 nodes under two leaf switches for three simulated
// minutes, as fast as the machine goes: real agents remote-writing and
// pushing health to an in-process gpuwatch server with its drain controller
// (the log actuator; node-04's reboot refused, so it ends drained), placement
// of the simulated workload, fair share and the built-in rules. The server
// keeps serving for the browser.
type storyRun struct {
	url    string
	tokens string // the demo's tokens/ directory
	out    *syncBuffer
	err    error
	stop   func()
}

var (
	storyOnce sync.Once
	story     storyRun
)

func TestMain(m *testing.M) {
	code := m.Run()
	if story.stop != nil {
		story.stop()
	}
	os.Exit(code)
}

// syncBuffer is a buffer safe for a writer and a reader at once.
type syncBuffer = syncbuf.Buffer

func runStory(t *testing.T) *storyRun {
	t.Helper()
	storyOnce.Do(func() {
		faults, err := os.ReadFile("testdata/story.yaml")
		if err != nil {
			story.err = err
			return
		}
		ctx, cancel := context.WithCancel(context.Background())
		story.out = &syncBuffer{}
		done := make(chan demo.Serving, 1)
		errc := make(chan error, 1)
		go func() {
			_, err := demo.Run(ctx, demo.Options{Nodes: 8, NodesPerLeaf: 4, Duration: 3 * time.Minute, Speed: -1,
				Faults: faults, FaultsName: "testdata/story.yaml",
				RefuseReboot: map[string]string{"node-04": "no RebootProgram for this node's rack"},
				ServerListen: "127.0.0.1:0", KeepServing: true,
				Out: story.out, Serving: func(s demo.Serving) {
					if s.Done != nil {
						done <- s
					}
				}})
			errc <- err
		}()
		select {
		case s := <-done:
			story.url, story.tokens = s.URL, filepath.Dir(s.GrafanaTokenFile)
			story.stop = func() { cancel(); <-errc }
		case err := <-errc:
			cancel()
			story.err = fmt.Errorf("demo: %v\n%s", err, story.out.String())
		case <-time.After(8 * time.Minute):
			cancel()
			story.err = fmt.Errorf("the demo did not finish in 8 minutes\n%s", story.out.String())
		}
	})
	if story.err != nil {
		t.Fatal(story.err)
	}
	return &story
}

// secret reads one of the demo's tokens (operator, admin, grafana).
func (s *storyRun) secret(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(s.tokens, name+".token"))
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

// login opens the UI as a person would: the fleet page sends them to the
// login page, they paste their token, and land back where they were going.
func login(t *testing.T, b *browser.Browser, s *storyRun, token, path string) *browser.Page {
	t.Helper()
	p := b.Open(t, s.url+path)
	p.MustDo("typing the token", chromedp.WaitVisible("#token"), chromedp.SendKeys("#token", s.secret(t, token)))
	p.Click(`form.login button[type="submit"]`)
	p.MustDo("waiting for the page after login", chromedp.WaitVisible("main h1"), chromedp.WaitNotPresent("#token"))
	return p
}

// unlabelled counts the page's form controls without a label.
const unlabelled = `[...document.querySelectorAll('input:not([type=hidden]),select,textarea,button')].filter(e =>
	!(e.labels && e.labels.length) && !e.getAttribute('aria-label') && !(e.tagName == 'BUTTON' && e.textContent.trim())).length`

func checkLabels(t *testing.T, p *browser.Page) {
	t.Helper()
	if n := browser.MustRun(p, "counting unlabelled controls", chromedp.Evaluate[int](unlabelled)); n != 0 {
		t.Errorf("%d form controls have no label", n)
	}
}

// TestFleetAndNode: an operator logs in and sees the fault story on the fleet
// page (node-04's lost GPU red and marked ×, node-04 listed out of service
// with why, the legend), follows node-04 to its page (the drain's reason,
// the GPU's condition with the catalog's action, the controller's history,
// the alert's runbook) and an alert link highlights the GPU.
func TestFleetAndNode(t *testing.T) {
	s := runStory(t)
	// The demo prints the UI's address first, with the operator token to log in with.
	if first, _, _ := strings.Cut(s.out.String(), "\n"); first != "web UI: "+s.url+"/ (log in with the operator token in "+filepath.Join(s.tokens, "operator.token")+")" {
		t.Errorf("the demo's first line: %q", first)
	}
	b := browser.New(t)
	p := login(t, b, s, "operator", "/")
	if got := p.Text("main h1"); got != "Fleet" {
		t.Fatalf("after login: %q, want the fleet page", got)
	}
	if n := p.Count(`.grid a.s3[href^="/node/node-04?gpu=5"]`); n != 1 {
		t.Errorf("node-04 GPU 5 (Xid 79, drained) is not one red cell: %d", n)
	}
	if txt := p.Text(`.grid a.s3[href^="/node/node-04?gpu=5"]`); txt != "×" {
		t.Errorf("the drained cell's non-colour cue is %q, want ×", txt)
	}
	if n := p.Count(".legend li"); n != 6 {
		t.Errorf("legend has %d entries, want the 6 states", n)
	}
	if held := p.Text("section.held"); !strings.Contains(held, "node-04") || !strings.Contains(held, "drained") {
		t.Errorf("out-of-service list lacks node-04 drained:\n%s", held)
	}
	if n := p.Count(".grid .node"); n != 8 {
		t.Errorf("%d nodes on the fleet page, want 8", n)
	}
	checkLabels(t, p)
	p.NoProblems()
	p.Screenshot("fleet")

	// Filter: only drained GPUs' nodes.
	p.MustDo("filtering", chromedp.Navigate(s.url+"/?state=drained"), chromedp.WaitVisible(".grid"))
	if n := p.Count(".grid .node"); n < 1 || n > 3 {
		t.Errorf("state=drained shows %d nodes", n)
	}
	p.MustDo("utilization", chromedp.Navigate(s.url+"/?color=util"), chromedp.WaitVisible(".grid.util"))
	p.Screenshot("fleet-utilization")

	// The node page, as an alert's link opens it.
	p.MustDo("opening node-04", chromedp.Navigate(s.url+"/node/node-04?gpu=5#gpu-5"), chromedp.WaitVisible("#gpu-5"))
	if cls := browser.MustRun(p, "row class", chromedp.Evaluate[string](`document.querySelector('#gpu-5').className`)); !strings.Contains(cls, "hl") {
		t.Errorf("GPU 5's row is not highlighted: class %q", cls)
	}
	status := p.Text(".drain-state")
	if !strings.Contains(status, "drained") || !strings.Contains(status, "Why:") {
		t.Errorf("node-04's drain status does not say why:\n%s", status)
	}
	if n := p.Count("#gpu-5 .st.s3"); n != 1 {
		t.Errorf("GPU 5 of node-04 is not shown drained (red)")
	}
	body := p.Text("main")
	for _, want := range []string{"gpu-lost", "Recommended:", "RESTART_BM", "Drain controller history", "InfiniBand ports", "Xid timeline"} {
		if !strings.Contains(body, want) {
			t.Errorf("node page lacks %q", want)
		}
	}
	if n := p.Count(`table.audit tbody tr`); n == 0 {
		t.Errorf("node-04's drain history is empty")
	}
	if n := p.Count(`a[href*="docs/runbooks/"]`); n == 0 {
		t.Errorf("no runbook link for node-04's alerts")
	}
	if n := p.Count(`table.xids tbody tr`); n == 0 {
		t.Errorf("node-04's Xid timeline is empty")
	}
	checkLabels(t, p)
	p.NoProblems()
	p.Screenshot("node-04")
}

// TestDrainFromUI: an operator drains node-03 from its page with a reason; the
// drain controller records it with the operator's token name as actor and the
// actuator (the demo's log actuator) accepts it; then resumes it.
func TestDrainFromUI(t *testing.T) {
	s := runStory(t)
	b := browser.New(t)
	p := login(t, b, s, "operator", "/node/node-03")
	p.MustDo("drain form", chromedp.WaitVisible("#drain-reason"), chromedp.SendKeys("#drain-reason", "INC-42 reseat GPU 2"))
	p.Click(`form.drain-form button[type="submit"]`)
	p.MustDo("waiting for the result", chromedp.WaitVisible(".flash"))
	if f := p.Text(".flash"); !strings.Contains(f, "drain of node-03") {
		t.Errorf("flash: %q", f)
	}
	rec := waitAudit(t, s, "node-03", "cordon", "accepted")
	if rec["user"] != "operator" || rec["reason"] != "INC-42 reseat GPU 2" {
		t.Errorf("audit record: %v, want user operator and the reason", rec)
	}
	p.MustDo("reload", chromedp.Navigate(s.url+"/node/node-03"), chromedp.WaitVisible(".drain-state"))
	if st := p.Text(".drain-state"); !strings.Contains(st, "INC-42 reseat GPU 2") || !strings.Contains(st, "manual drain by operator") {
		t.Errorf("node-03 after the drain:\n%s", st)
	}
	p.Screenshot("node-03-drained")
	p.MustDo("resume form", chromedp.SendKeys("#resume-reason-node-03", "INC-42 GPU 2 reseated"))
	p.Click(`form[action="/ui/resume"] button`)
	p.MustDo("waiting for the resume", chromedp.WaitVisible(".flash"))
	if rec := waitAudit(t, s, "node-03", "resume", "accepted"); rec["reason"] != "INC-42 GPU 2 reseated" || rec["user"] != "operator" {
		t.Errorf("the resume's audit record: %v, want user operator and the reason", rec)
	}
	p.NoProblems()
}

// waitAudit polls the audit API (as the admin) for a record.
func waitAudit(t *testing.T, s *storyRun, node, action, outcome string) map[string]any {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		req, _ := http.NewRequest("GET", s.url+"/api/gpuwatch/v1/audit", nil)
		req.Header.Set("Authorization", "Bearer "+s.secret(t, "admin"))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var body struct {
			Audit []map[string]any `json:"audit"`
		}
		json.NewDecoder(resp.Body).Decode(&body)
		resp.Body.Close()
		for i := len(body.Audit) - 1; i >= 0; i-- {
			r := body.Audit[i]
			if r["node"] == node && r["action"] == action && r["outcome"] == outcome && r["event"] == "actuation" {
				// The actuation's record names no user; the manual request's does.
				for j := i; j >= 0; j-- {
					if m := body.Audit[j]; m["node"] == node && m["event"] == "manual" && m["action"] == action {
						return m
					}
				}
				return r
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %s %s record for %s reached the actuator in 60 s", action, outcome, node)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// TestReadOnlyAndCSRF: a read-only person sees no action controls; a forged
// POST riding an operator's session without the CSRF token, or from another
// origin, is refused and changes nothing; with the token it is taken.
func TestReadOnlyAndCSRF(t *testing.T) {
	s := runStory(t)
	b := browser.New(t)
	p := login(t, b, s, "grafana", "/node/node-04")
	if n := p.Count(`form[action^="/ui/"]`); n != 0 {
		t.Errorf("a read-only user sees %d action forms", n)
	}
	p.MustDo("drains page", chromedp.Navigate(s.url+"/drains"), chromedp.WaitVisible("main h1"))
	if n := p.Count(`form[action^="/ui/"]`); n != 0 {
		t.Errorf("a read-only user sees %d action forms on the drains page", n)
	}
	p.NoProblems()

	// An operator's session, from Go.
	jar := &cookieJar{}
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	post := func(path string, form url.Values, origin string) (int, string) {
		req, _ := http.NewRequest("POST", s.url+path, strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		jar.add(req)
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		jar.take(resp)
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	if code, body := post("/login", url.Values{"token": {s.secret(t, "operator")}}, s.url); code != http.StatusSeeOther || jar.session == "" {
		t.Fatalf("login: %d %s", code, body)
	}
	forged := url.Values{"node": {"node-01"}, "reason": {"forged"}}
	if code, body := post("/ui/drain", forged, s.url); code != http.StatusForbidden || !strings.Contains(body, "CSRF") {
		t.Errorf("a drain without the CSRF token: %d %s, want 403", code, body)
	}
	// The token from a page of the session.
	req, _ := http.NewRequest("GET", s.url+"/node/node-01", nil)
	jar.add(req)
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	_, rest, _ := strings.Cut(string(page), `name="csrf_token" value="`)
	token, _, _ := strings.Cut(rest, `"`)
	if token == "" {
		t.Fatalf("no CSRF token in the node page")
	}
	forged.Set("csrf_token", token)
	if code, _ := post("/ui/drain", forged, "http://evil.example"); code != http.StatusForbidden {
		t.Errorf("a drain from another origin: %d, want 403", code)
	}
	req, _ = http.NewRequest("GET", s.url+"/api/gpuwatch/v1/nodes/node-01", nil)
	req.Header.Set("Authorization", "Bearer "+s.secret(t, "admin"))
	resp, _ = http.DefaultClient.Do(req)
	nb, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if strings.Contains(string(nb), "forged") {
		t.Errorf("a refused request drained node-01: %s", nb)
	}
	if code, body := post("/ui/resume", url.Values{"node": {"node-01"}, "reason": {"checked"}, "csrf_token": {token}}, s.url); code != http.StatusSeeOther {
		t.Errorf("a resume with the token from the same origin: %d %s", code, body)
	}
	waitAudit(t, s, "node-01", "resume", "accepted")
	// Logged out, the session is gone.
	post("/logout", url.Values{"csrf_token": {token}}, s.url)
	req, _ = http.NewRequest("GET", s.url+"/", nil)
	req.Header.Set("Accept", "text/html")
	req.AddCookie(&http.Cookie{Name: "gpuwatch_session", Value: jar.last})
	resp, _ = c.Do(req)
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther || !strings.HasPrefix(resp.Header.Get("Location"), "/login") {
		t.Errorf("after logout the session still opens the fleet: %d %s", resp.StatusCode, resp.Header.Get("Location"))
	}
}

// cookieJar keeps the session cookie (net/http's jar would do, but the test
// wants to see it).
type cookieJar struct{ session, last string }

func (j *cookieJar) add(r *http.Request) {
	if j.session != "" {
		r.AddCookie(&http.Cookie{Name: "gpuwatch_session", Value: j.session})
	}
}

func (j *cookieJar) take(resp *http.Response) {
	for _, c := range resp.Cookies() {
		if c.Name == "gpuwatch_session" {
			if j.session != "" {
				j.last = j.session
			}
			j.session = c.Value
			if c.MaxAge < 0 {
				j.session = ""
			}
		}
	}
}

// TestPages: the GPU page's charts, the drains, placements, fair-share and
// alerts pages load with their content and no browser problem.
func TestPages(t *testing.T) {
	s := runStory(t)
	b := browser.New(t)
	p := login(t, b, s, "admin", "/node/node-03/gpu/2?hours=1")
	if n := p.Count("svg.chart polyline"); n < 6 {
		t.Errorf("GPU page: %d chart lines", n)
	}
	if txt := p.Text("main"); !strings.Contains(txt, "ECC errors") || !strings.Contains(txt, "Temperatures") {
		t.Errorf("GPU page lacks its charts:\n%.500s", txt)
	}
	checkLabels(t, p)
	p.NoProblems()
	p.Screenshot("gpu")
	for _, pg := range []struct{ path, sel, want string }{
		{"/drains", "table.audit", "accepted"},
		{"/placements", "table.decisions", "placed"},
		{"/fairshare", "table.standing", "root"},
		{"/alerts", "main", "Gpuwatch"},
		{"/reports?by=account", "section.gw-report", "GPU-hours by account"},
	} {
		p.MustDo("opening "+pg.path, chromedp.Navigate(s.url+pg.path), chromedp.WaitVisible(pg.sel))
		if txt := p.Text(pg.sel); !strings.Contains(txt, pg.want) {
			t.Errorf("%s: %s lacks %q:\n%.800s", pg.path, pg.sel, pg.want, txt)
		}
		checkLabels(t, p)
		p.Screenshot(strings.Trim(pg.path, "/"))
	}
	// A decision's explanation, from the list.
	p.MustDo("first decision", chromedp.Navigate(s.url+"/placements"), chromedp.WaitVisible("table.decisions"))
	p.Click("table.decisions tbody tr a")
	p.MustDo("explanation", chromedp.WaitVisible("pre.explain"))
	if txt := p.Text("pre.explain"); !strings.Contains(txt, "decision ") || !strings.Contains(txt, "evaluated") {
		t.Errorf("explanation:\n%s", txt)
	}
	p.NoProblems()
	p.Screenshot("placement")
}
