package remote_test

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/telemetry/store/embedded/embeddedtest"
	"github.com/gpuwatch/gpuwatch/test/realstore"
)

var record = flag.Bool("record", false, "record real servers' answers into testdata/ (needs victoria-metrics and prometheus)")

// recording is one real answer: what was asked, and what came back.
type recording struct {
	Server string     `json:"server"` // "victoria-metrics 1.79" or "prometheus 2.42"
	Base   int64      `json:"base"`   // unix ms of the first sample of the recorded fleet
	Path   string     `json:"path"`
	Form   url.Values `json:"form"`
	Status int        `json:"status"`
	Body   string     `json:"body"`
}

// recordedFleet is what the recordings were made over: 1 node × 8 GPUs of
// DCGM_FI_DEV_GPU_UTIL, 20 samples 15 s apart.
const recordedSteps = 20

// recordedQueries are asked of each server; the names are the files' names.
func recordedQueries(base time.Time) map[string]struct {
	path string
	form url.Values
} {
	at := fmt.Sprint(base.Add(10 * 15 * time.Second).Unix())
	end := fmt.Sprint(base.Add((recordedSteps - 1) * 15 * time.Second).Unix())
	type q = struct {
		path string
		form url.Values
	}
	return map[string]q{
		"vector":     {"/api/v1/query", url.Values{"query": {`DCGM_FI_DEV_GPU_UTIL`}, "time": {at}}},
		"matrix":     {"/api/v1/query_range", url.Values{"query": {`DCGM_FI_DEV_GPU_UTIL{gpu=~"[01]"}`}, "start": {fmt.Sprint(base.Unix())}, "end": {end}, "step": {"15"}}},
		"aggregate":  {"/api/v1/query_range", url.Values{"query": {`sum by (Hostname) (DCGM_FI_DEV_GPU_UTIL)`}, "start": {fmt.Sprint(base.Unix())}, "end": {end}, "step": {"60"}}},
		"scalar":     {"/api/v1/query", url.Values{"query": {`1+1`}, "time": {at}}},
		"nan":        {"/api/v1/query", url.Values{"query": {`DCGM_FI_DEV_GPU_UTIL{gpu="0"} / 0 - DCGM_FI_DEV_GPU_UTIL{gpu="0"} / 0`}, "time": {at}}},
		"empty":      {"/api/v1/query", url.Values{"query": {`DCGM_FI_DEV_POWER_USAGE`}, "time": {at}}},
		"parseerror": {"/api/v1/query", url.Values{"query": {`sum(`}, "time": {at}}},
		"badstep":    {"/api/v1/query_range", url.Values{"query": {`DCGM_FI_DEV_GPU_UTIL`}, "start": {end}, "end": {fmt.Sprint(base.Unix())}, "step": {"15"}}},
	}
}

// TestRecord writes testdata/<server>-<query>.json from the real servers. Run it
// with -record after changing recordedQueries.
func TestRecord(t *testing.T) {
	if !*record {
		t.Skip("run with -record to re-record the real servers' answers")
	}
	base := time.Now().UTC().Truncate(time.Minute).Add(-10 * time.Minute)
	data := embeddedtest.GPUUtil(1, base, recordedSteps, 15*time.Second)
	for name, srv := range map[string]*realstore.Server{
		"victoriametrics": realstore.StartVictoriaMetrics(t),
		"prometheus":      realstore.StartPrometheus(t),
	} {
		label := "prometheus 2.42"
		if srv.Kind() == realstore.VictoriaMetrics {
			label = "victoria-metrics 1.79"
			srv.ImportSamples(data)
			time.Sleep(3 * time.Second) // new series become searchable within a second or two
		} else {
			srv.Write(data)
		}
		for qname, q := range recordedQueries(base) {
			resp, err := http.PostForm(srv.URL()+q.path, q.form)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			rec := recording{Server: label, Base: base.UnixMilli(), Path: q.path, Form: q.form, Status: resp.StatusCode, Body: strings.TrimSpace(string(body))}
			out, _ := json.MarshalIndent(rec, "", "  ")
			if err := os.WriteFile(filepath.Join("testdata", name+"-"+qname+".json"), append(out, '\n'), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
}
