package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/VictoriaMetrics/metrics"

	"github.com/gpuwatch/gpuwatch/collector"
	"github.com/gpuwatch/gpuwatch/telemetry"
)

// importPath is the import endpoint of the gpuwatch server and of
// VictoriaMetrics: Prometheus exposition text.
const importPath = "/api/v1/import/prometheus"

// checkVerdict is what `gpuwatch check --push` sends: the verdict, the GPU
// counts and how long the check took.
type checkVerdict struct {
	Node     string
	Healthy  bool               // the check exits 0 (warnings included)
	GPUs     map[string]float64 // gpuwatch_node_gpus by source: pci, nvml, expected
	Duration time.Duration
	At       time.Time
}

// gpuCounts reads gpuwatch_node_gpus by source from a snapshot.
func gpuCounts(snap *collector.Snapshot) map[string]float64 {
	out := map[string]float64{}
	if snap == nil {
		return out
	}
	for _, s := range snap.Samples {
		if s.Name == telemetry.MetricNodeGPUs {
			if src := s.Labels.Get(telemetry.LabelSource); src != "" {
				out[src] = s.Value
			}
		}
	}
	return out
}

// render writes the verdict as exposition text with VictoriaMetrics's metrics
// library (the short-lived process's set, written once): every series carries
// job="gpuwatch-check", instance and node, so a node-bound agent token may
// write it and it sits beside the agent's series of the node.
func (v checkVerdict) render() []byte {
	set := metrics.NewSet()
	labels := func(extra string) string {
		return fmt.Sprintf(`{job="gpuwatch-check",instance=%q,node=%q%s}`, v.Node, v.Node, extra)
	}
	healthy := 0.0
	if v.Healthy {
		healthy = 1
	}
	set.NewGauge("gpuwatch_check_healthy"+labels(""), nil).Set(healthy)
	for _, src := range []string{string(telemetry.SourcePCI), string(telemetry.SourceNVML), "expected"} {
		if n, ok := v.GPUs[src]; ok {
			set.NewGauge("gpuwatch_check_gpus"+labels(`,source="`+src+`"`), nil).Set(n)
		}
	}
	set.NewGauge("gpuwatch_check_duration_seconds"+labels(""), nil).Set(v.Duration.Seconds())
	set.NewGauge("gpuwatch_check_timestamp_seconds"+labels(""), nil).Set(float64(v.At.UnixMilli()) / 1e3)
	var b bytes.Buffer
	set.WritePrometheus(&b)
	return b.Bytes()
}

// pushURL is the import endpoint: the URL as given, or with the import path
// added when it names only the server.
func pushURL(raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("%w: --push %q: want the import endpoint, http(s)://host:port%s (the gpuwatch server's or VictoriaMetrics's)", errUsage, raw, importPath)
	}
	if u.Path == "" || u.Path == "/" {
		u.Path = importPath
	}
	return u.String(), nil
}

// push POSTs the verdict to the import endpoint once. An error says what the
// endpoint answered; the caller only warns about it.
func (v checkVerdict) push(ctx context.Context, endpoint string, rt http.RoundTripper, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, bytes.NewReader(v.render()))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "text/plain; version=0.0.4")
	resp, err := (&http.Client{Transport: rt}).Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return fmt.Errorf("%s answered %s: %s", endpoint, resp.Status, strings.TrimSpace(string(b)))
	}
	return nil
}
