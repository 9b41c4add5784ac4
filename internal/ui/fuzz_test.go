package ui

import (
	"net/url"
	"strings"
	"testing"
)

// FuzzSafeNext: whatever a login link's next= says, the person lands on a
// path of this server.
func FuzzSafeNext(f *testing.F) {
	for _, s := range []string{"/", "/node/node-01?gpu=3#gpu-3", "//evil.example/", "/\\evil", "https://evil.example", "/login?next=/", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, next string) {
		got := safeNext(next)
		u, err := url.Parse(got)
		if err != nil || !strings.HasPrefix(got, "/") || strings.HasPrefix(got, "//") || u.Host != "" || u.Scheme != "" ||
			strings.ContainsAny(got, "\\\r\n") {
			t.Fatalf("safeNext(%q) = %q leaves this server", next, got)
		}
	})
}

// FuzzAlertLink: an alert's labels (anything a rule file or a series put
// there) make a link under the external URL to a node page or the alerts
// page, never elsewhere.
func FuzzAlertLink(f *testing.F) {
	f.Add("node-04", "5", "GpuwatchGPULost")
	f.Add("../x", "", "a b")
	f.Add("n", "-1", "")
	f.Fuzz(func(t *testing.T, node, gpu, name string) {
		got := AlertLink("https://gw.example", map[string]string{"node": node, "gpu_index": gpu, "alertname": name})
		u, err := url.Parse(got)
		if err != nil || u.Host != "gw.example" || !(strings.HasPrefix(u.Path, "/node/") || u.Path == "/alerts") {
			t.Fatalf("AlertLink(%q, %q, %q) = %q", node, gpu, name, got)
		}
		if strings.HasPrefix(u.Path, "/node/") && u.Path != "/node/"+node {
			t.Fatalf("AlertLink for node %q links to %q", node, u.Path)
		}
	})
}
