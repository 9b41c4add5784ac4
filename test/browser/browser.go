// Package browser drives Debian's headless Chromium from Go tests (through
// chromedp) for everything gpuwatch shows a person in a browser: the web UI and the
// HTML utilization report. A test calls New for a browser, Open for a page; the page
// records every console error, uncaught exception and failed request, so a test can
// assert there were none, and Screenshot saves a full-page PNG as a test artifact.
//
// When Chromium is absent the test is skipped, naming it — unless
// GPUWATCH_REQUIRE_BROWSER=1 is set (as `make test` sets it after installing the
// Debian package), in which case it fails. GPUWATCH_CHROMIUM overrides the binary's
// path. Screenshots go under $GPUWATCH_TEST_ARTIFACTS (default
// $TMPDIR/gpuwatch-test-artifacts), one directory per test.
package browser

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
)

// RequireEnv, set to "1", turns a missing Chromium from a skip into a failure.
const RequireEnv = "GPUWATCH_REQUIRE_BROWSER"

// ArtifactsEnv names the directory screenshots are written under.
const ArtifactsEnv = "GPUWATCH_TEST_ARTIFACTS"

// DefaultTimeout bounds one action on a page.
const DefaultTimeout = 60 * time.Second

// Binary finds Chromium: $GPUWATCH_CHROMIUM, else chromium, chromium-browser,
// google-chrome on PATH.
func Binary() (string, error) {
	if p := os.Getenv("GPUWATCH_CHROMIUM"); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("GPUWATCH_CHROMIUM=%s: %w", p, err)
		}
		return p, nil
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("no chromium on PATH (install Debian's chromium, or set GPUWATCH_CHROMIUM)")
}

// Browser is one headless Chromium process, stopped when the test ends.
type Browser struct {
	ctx context.Context // the browser's context; each page is a new tab of it
}

// New starts headless Chromium for t, or skips t when there is none (fails it under
// GPUWATCH_REQUIRE_BROWSER=1). The window is 1400×1000 CSS pixels.
func New(t testing.TB) *Browser {
	t.Helper()
	bin, err := Binary()
	if err != nil {
		if os.Getenv(RequireEnv) == "1" {
			t.Fatalf("%v, and %s=1", err, RequireEnv)
		}
		t.Skipf("%v; skipping the browser test", err)
	}
	opts := append([]chromedp.ExecAllocatorOption{}, chromedp.DefaultExecAllocatorOptions[:]...)
	opts = append(opts,
		chromedp.ExecPath(bin),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1400, 1000),
		chromedp.NoSandbox, // tests run as root in CI; the sandbox refuses root
		chromedp.DisableGPU,
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	bctx, cancelBrowser := chromedp.NewContext(actx)
	// Start the browser now, so a broken install fails here and not in a page.
	if err := chromedp.Do(bctx); err != nil {
		cancelBrowser()
		cancelAlloc()
		t.Fatalf("starting %s: %v", bin, err)
	}
	t.Cleanup(func() {
		cancelBrowser()
		cancelAlloc()
	})
	return &Browser{ctx: bctx}
}

// Page is one tab. Its problems (console errors, exceptions, failed requests and
// error responses) are collected from the moment it is opened.
type Page struct {
	t   testing.TB
	ctx context.Context

	mu       sync.Mutex
	problems []string
}

// Option changes how a page is opened.
type Option func(*pageConfig)

type pageConfig struct {
	headers network.Headers
}

// WithBearer sends "Authorization: Bearer secret" with every request of the page, as
// a client holding a gpuwatch token would.
func WithBearer(secret string) Option {
	return WithHeader("Authorization", "Bearer "+secret)
}

// WithHeader sends an extra header with every request of the page.
func WithHeader(name, value string) Option {
	return func(c *pageConfig) { c.headers[name] = value }
}

// Open opens url in a new tab and waits for its load event. The tab closes when the
// test ends.
func (b *Browser) Open(t testing.TB, url string, opts ...Option) *Page {
	t.Helper()
	cfg := pageConfig{headers: network.Headers{}}
	for _, o := range opts {
		o(&cfg)
	}
	ctx, cancel := chromedp.NewContext(b.ctx)
	p := &Page{t: t, ctx: ctx}
	// Open the tab, then subscribe before anything loads in it.
	if err := chromedp.Do(ctx); err != nil {
		cancel()
		t.Fatalf("opening a tab: %v", err)
	}
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait() })
	console := chromedp.Console(ctx)
	responses := chromedp.Events(ctx, network.ResponseReceived)
	failures := chromedp.Events(ctx, network.LoadingFailed)
	wg.Add(3)
	go func() {
		defer wg.Done()
		for m, err := range console {
			if err != nil {
				return
			}
			if m.Type == chromedp.ConsoleError || m.Type == chromedp.ConsoleException {
				p.addProblem(fmt.Sprintf("console %s at %s:%d: %s", m.Type, m.URL, m.Line+1, m.Text))
			}
		}
	}()
	go func() {
		defer wg.Done()
		for ev, err := range responses {
			if err != nil {
				return
			}
			if ev.Response != nil && ev.Response.Status >= 400 {
				p.addProblem(fmt.Sprintf("%s answered %d", ev.Response.URL, ev.Response.Status))
			}
		}
	}()
	go func() {
		defer wg.Done()
		for ev, err := range failures {
			if err != nil {
				return
			}
			if !ev.Canceled {
				p.addProblem(fmt.Sprintf("request %s failed: %s", ev.RequestID, ev.ErrorText))
			}
		}
	}()
	steps := []chromedp.Action[chromedp.Void]{call(network.Enable, network.EnableParams{})}
	if len(cfg.headers) > 0 {
		steps = append(steps, call(network.SetExtraHTTPHeaders, network.SetExtraHTTPHeadersParams{Headers: cfg.headers}))
	}
	steps = append(steps, chromedp.Navigate(url))
	if err := p.Do(steps...); err != nil {
		t.Fatalf("opening %s: %v", url, err)
	}
	return p
}

// call makes a protocol command an action.
func call[P, R any](cmd cdp.Command[P, R], params P) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		_, err := cdp.Call(ctx, t, cmd, params)
		return err
	})
}

func (p *Page) addProblem(s string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.problems = append(p.problems, s)
}

// Context is the tab's context, for chromedp calls the helpers here do not cover
// (chromedp.Run(page.Context(), chromedp.Evaluate[int]("…")) and the like).
func (p *Page) Context() context.Context { return p.ctx }

// Do runs chromedp actions that return nothing in the tab, in order, bounded by
// DefaultTimeout.
func (p *Page) Do(steps ...chromedp.Action[chromedp.Void]) error {
	ctx, cancel := context.WithTimeout(p.ctx, DefaultTimeout)
	defer cancel()
	return chromedp.Do(ctx, steps...)
}

// MustDo is Do failing the test on error, naming what was being done.
func (p *Page) MustDo(what string, steps ...chromedp.Action[chromedp.Void]) {
	p.t.Helper()
	if err := p.Do(steps...); err != nil {
		p.t.Fatalf("%s: %v", what, err)
	}
}

// Run runs one chromedp action that returns a value in the tab, bounded by
// DefaultTimeout.
func Run[T any](p *Page, a chromedp.Action[T]) (T, error) {
	ctx, cancel := context.WithTimeout(p.ctx, DefaultTimeout)
	defer cancel()
	return chromedp.Run(ctx, a)
}

// MustRun is Run failing the test on error, naming what was being done.
func MustRun[T any](p *Page, what string, a chromedp.Action[T]) T {
	p.t.Helper()
	v, err := Run(p, a)
	if err != nil {
		p.t.Fatalf("%s: %v", what, err)
	}
	return v
}

// Text is the visible text of the first element matching the CSS selector, waiting
// for it to be visible.
func (p *Page) Text(selector string) string {
	p.t.Helper()
	return MustRun(p, "reading the text of "+selector, chromedp.Text(chromedp.CSS(selector), chromedp.NodeVisible))
}

// Count is how many elements match the CSS selector now.
func (p *Page) Count(selector string) int {
	p.t.Helper()
	return MustRun(p, "counting "+selector, chromedp.Evaluate[int](fmt.Sprintf("document.querySelectorAll(%q).length", selector)))
}

// Click clicks the first element matching the CSS selector, waiting for it to be
// visible.
func (p *Page) Click(selector string) {
	p.t.Helper()
	p.MustDo("clicking "+selector, chromedp.Click(chromedp.CSS(selector), chromedp.NodeVisible))
}

// Problems are the console errors, uncaught exceptions, failed requests and error
// responses seen since the page was opened.
func (p *Page) Problems() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.problems...)
}

// NoProblems fails the test listing every console error, exception, failed request
// or error response seen since the page was opened, except those matching an allow
// pattern (for a test that provokes one on purpose).
func (p *Page) NoProblems(allow ...*regexp.Regexp) {
	p.t.Helper()
	// Let late events (a failing fetch after load) arrive.
	_ = p.Do(chromedp.Sleep(200 * time.Millisecond))
outer:
	for _, s := range p.Problems() {
		for _, re := range allow {
			if re.MatchString(s) {
				continue outer
			}
		}
		p.t.Errorf("browser: %s", s)
	}
}

// Screenshot saves a full-page PNG named name+".png" under the test's artifact
// directory and returns its path.
func (p *Page) Screenshot(name string) string {
	p.t.Helper()
	buf := MustRun(p, "taking screenshot "+name, chromedp.FullScreenshot(100)) // quality 100: PNG
	path := filepath.Join(ArtifactDir(p.t), name+".png")
	if err := os.WriteFile(path, buf, 0o644); err != nil {
		p.t.Fatalf("saving screenshot: %v", err)
	}
	p.t.Logf("screenshot: %s", path)
	return path
}

// ArtifactDir is the directory t's artifacts are written to, created if needed:
// $GPUWATCH_TEST_ARTIFACTS/<test name>, or under the system temp dir.
func ArtifactDir(t testing.TB) string {
	t.Helper()
	root := os.Getenv(ArtifactsEnv)
	if root == "" {
		root = filepath.Join(os.TempDir(), "gpuwatch-test-artifacts")
	}
	dir := filepath.Join(root, regexp.MustCompile(`[^A-Za-z0-9_.-]+`).ReplaceAllString(t.Name(), "_"))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatalf("artifact dir: %v", err)
	}
	return dir
}
