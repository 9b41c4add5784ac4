package browser

import (
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestPageSeesContentProblemsAndHeaders loads pages from a loopback server: the
// text is read, a console error, an uncaught exception and a 404 are all reported,
// the bearer header reaches the server, and the screenshot is a PNG.
func TestPageSeesContentProblemsAndHeaders(t *testing.T) {
	var gotAuth string
	mux := http.NewServeMux()
	mux.HandleFunc("GET /ok", func(w http.ResponseWriter, r *http.Request) {
		gotAuth = r.Header.Get("Authorization")
		w.Header().Set("Content-Type", "text/html")
		w.Write([]byte(`<!doctype html><title>ok</title><h1 id="h">GPU 3 is red</h1><button aria-label="drain">x</button>`))
	})
	mux.HandleFunc("GET /bad", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.Write([]byte(`<!doctype html><title>bad</title><p>x</p><img src="/missing.png">` +
			`<script>console.error("boom from the page"); throw new Error("uncaught here");</script>`))
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()

	b := New(t)
	ok := b.Open(t, srv.URL+"/ok", WithBearer("s3cret"))
	if got := ok.Text("#h"); got != "GPU 3 is red" {
		t.Errorf("text = %q", got)
	}
	if n := ok.Count("button"); n != 1 {
		t.Errorf("buttons = %d", n)
	}
	if gotAuth != "Bearer s3cret" {
		t.Errorf("Authorization = %q", gotAuth)
	}
	ok.NoProblems(regexp.MustCompile(`favicon\.ico`))
	path := ok.Screenshot("ok")
	png, err := os.ReadFile(path)
	if err != nil || len(png) < 8 || string(png[1:4]) != "PNG" {
		t.Fatalf("screenshot %s: %v, %d bytes", path, err, len(png))
	}

	bad := b.Open(t, srv.URL+"/bad")
	bad.MustDo("settle", chromedp.WaitReady(chromedp.CSS("p")), chromedp.Sleep(300*time.Millisecond))
	all := strings.Join(bad.Problems(), "\n")
	for _, want := range []string{"boom from the page", "uncaught here", "missing.png answered 404"} {
		if !strings.Contains(all, want) {
			t.Errorf("problems do not mention %q:\n%s", want, all)
		}
	}
}
