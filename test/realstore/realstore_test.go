package realstore_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/test/realstore"
)

// instant asks srv for expr at ts and returns the result list.
func instant(t *testing.T, srv *realstore.Server, expr string, ts time.Time) []any {
	t.Helper()
	resp, err := http.PostForm(srv.URL()+"/api/v1/query", url.Values{"query": {expr}, "time": {fmt.Sprint(ts.Unix())}})
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var env struct {
		Status string
		Data   struct{ Result []any }
	}
	if err := json.Unmarshal(body, &env); err != nil || env.Status != "success" {
		t.Fatalf("query %s: %s (%v)", expr, body, err)
	}
	return env.Data.Result
}

func TestVictoriaMetricsRestartKeepsData(t *testing.T) {
	vm := realstore.StartVictoriaMetrics(t)
	now := time.Now().Truncate(time.Second)
	vm.ImportText(fmt.Sprintf("gpuwatch_realstore_test{node=\"a\"} 42 %d\n", now.UnixMilli()))
	realstore.Eventually(t, 10*time.Second, "imported sample visible", func() bool {
		return len(instant(t, vm, "gpuwatch_realstore_test", now)) == 1
	})
	url := vm.URL()
	vm.Stop()
	if vm.Running() {
		t.Fatal("Running after Stop")
	}
	if _, err := http.Get(url + "/health"); err == nil {
		t.Fatal("server answers after Stop")
	}
	vm.Start()
	if vm.URL() != url {
		t.Errorf("URL changed across restart: %s → %s", url, vm.URL())
	}
	if got := instant(t, vm, "gpuwatch_realstore_test", now); len(got) != 1 {
		t.Fatalf("after restart: %v", got)
	}
}

func TestPrometheusStarts(t *testing.T) {
	p := realstore.StartPrometheus(t)
	if got := instant(t, p, "1+1", time.Now()); len(got) != 2 {
		t.Fatalf("1+1 = %v", got)
	}
	if p.ImportURL() != "" {
		t.Errorf("Prometheus ImportURL = %q, want empty", p.ImportURL())
	}
	p.Stop()
	p.Start()
	if got := instant(t, p, "1+1", time.Now()); len(got) != 2 {
		t.Fatalf("after restart 1+1 = %v", got)
	}
}
