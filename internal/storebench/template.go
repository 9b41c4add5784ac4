package main

import (
	"context"
	"fmt"
	"hash/fnv"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/prometheus/prompb"

	"github.com/gpuwatch/gpuwatch/collector/agent"
	"github.com/gpuwatch/gpuwatch/collector/simhw"
	"github.com/gpuwatch/gpuwatch/telemetry"
)

// tmplSeries is one series of the template node: its sorted labels (__name__
// included) and whether it is a counter (values only grow).
type tmplSeries struct {
	labels  []prompb.Label
	counter bool
}

// template is one real agent's shipped series on a simulated HGX H100 node and
// their values over a run of full collection cycles, replicated over any number
// of node names.
type template struct {
	node   string // the simulated node's name, replaced in replicas
	series []tmplSeries
	// values[c][i] is series i's value in collected cycle c; a series absent from
	// a cycle keeps its previous value.
	values [][]float64
	// metricsLines and scrapeOnly are what GET /metrics answered after the first
	// cycle: every series line, and those of them the shipper does not send
	// (go_*, process_*, added by the HTTP handler at scrape time).
	metricsLines, scrapeOnly int
}

// simulateTemplate runs one gpuwatch agent (production code, dcgm-exporter
// labels, DCGM off) on one simulated HGX H100 node with its workload generator,
// collecting `cycles` full cycles 10 simulated seconds apart, and keeps what the
// shipper would send: the exporter's rendered families plus the node label.
func simulateTemplate(cycles int, seed int64) (*template, error) {
	if cycles < 1 {
		return nil, fmt.Errorf("template: %d cycles: need at least 1", cycles)
	}
	base := ""
	if st, err := os.Stat("/dev/shm"); err == nil && st.IsDir() {
		base = "/dev/shm"
	}
	root, err := os.MkdirTemp(base, "gpuwatch-storebench-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(root)
	f, err := simhw.NewFleet(simhw.FleetSpec{Nodes: 1, Shape: simhw.ShapeHGXH100, Seed: seed, Root: root})
	if err != nil {
		return nil, err
	}
	gen := simhw.NewWorkloadGenerator(f, simhw.WorkloadOptions{Seed: seed})
	advance := func(d time.Duration) error {
		if err := f.Advance(d); err != nil {
			return err
		}
		return gen.Step()
	}
	// Let the workload generator place jobs before the first cycle.
	for range 6 {
		if err := advance(10 * time.Second); err != nil {
			return nil, err
		}
	}
	n := f.Nodes()[0]
	boot := n.Boot()
	a, err := agent.New(agent.Options{
		Node: n.Name(), NVML: n.NVML(), SysfsRoot: n.SysRoot(), ProcRoot: n.ProcRoot(), KmsgPath: n.KmsgPath(),
		KmsgFromStart: true, BootTime: func() (time.Time, error) { return boot, nil }, BootID: "sim-boot",
		DCGMDisable: true, KubeletSocket: "-", Now: f.Now, KmsgPoll: 5 * time.Millisecond,
	})
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	wait := a.Start(ctx)
	defer func() {
		cancel()
		wait()
		a.Close()
	}()

	t := &template{node: n.Name()}
	index := map[string]int{}
	for c := 0; c < cycles; c++ {
		if c > 0 {
			if err := advance(10 * time.Second); err != nil {
				return nil, err
			}
		}
		a.Collect(ctx, true)
		fams, err := a.Exporter.Gather()
		if err != nil {
			return nil, err
		}
		row := make([]float64, len(t.series))
		if c > 0 {
			copy(row, t.values[c-1])
		}
		for _, mf := range fams {
			for _, m := range mf.Metric {
				v, ok := metricValue(m)
				if !ok {
					continue
				}
				ls := shippedLabels(mf.GetName(), m.Label, n.Name())
				key := labelKey(ls)
				i, seen := index[key]
				if !seen {
					if c > 0 {
						continue // a series born later (a job's allocation): the template keeps the first cycle's set
					}
					i = len(t.series)
					index[key] = i
					t.series = append(t.series, tmplSeries{labels: ls, counter: mf.GetType() == dto.MetricType_COUNTER})
					row = append(row, 0)
				}
				row[i] = v
			}
		}
		t.values = append(t.values, row)
		if c == 0 {
			t.metricsLines, t.scrapeOnly, err = countMetrics(a.Handler())
			if err != nil {
				return nil, err
			}
		}
	}
	return t, nil
}

func metricValue(m *dto.Metric) (float64, bool) {
	switch {
	case m.Gauge != nil:
		return m.Gauge.GetValue(), true
	case m.Counter != nil:
		return m.Counter.GetValue(), true
	case m.Untyped != nil:
		return m.Untyped.GetValue(), true
	}
	return 0, false
}

// shippedLabels is the label set the shipper sends for a rendered metric: its
// labels, __name__, and node=<node> when it has no node label (the agent's
// ExtraLabels).
func shippedLabels(name string, pairs []*dto.LabelPair, node string) []prompb.Label {
	ls := []prompb.Label{{Name: "__name__", Value: name}}
	hasNode := false
	for _, p := range pairs {
		if p.GetValue() == "" {
			continue
		}
		ls = append(ls, prompb.Label{Name: p.GetName(), Value: p.GetValue()})
		hasNode = hasNode || p.GetName() == telemetry.LabelNode
	}
	if !hasNode {
		ls = append(ls, prompb.Label{Name: telemetry.LabelNode, Value: node})
	}
	slices.SortFunc(ls, func(a, b prompb.Label) int { return strings.Compare(a.Name, b.Name) })
	return ls
}

func labelKey(ls []prompb.Label) string {
	var b strings.Builder
	for _, l := range ls {
		b.WriteString(l.Name)
		b.WriteByte(0xff)
		b.WriteString(l.Value)
		b.WriteByte(0xfe)
	}
	return b.String()
}

// countMetrics GETs /metrics from the agent's handler and counts the series
// lines, and of them the scrape-only go_* and process_* ones.
func countMetrics(h http.Handler) (lines, scrapeOnly int, err error) {
	srv := httptest.NewServer(h)
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/metrics")
	if err != nil {
		return 0, 0, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, 0, err
	}
	if resp.StatusCode != http.StatusOK {
		return 0, 0, fmt.Errorf("GET /metrics: %s", resp.Status)
	}
	for _, l := range strings.Split(string(body), "\n") {
		if l == "" || l[0] == '#' {
			continue
		}
		lines++
		if strings.HasPrefix(l, "go_") || strings.HasPrefix(l, "process_") {
			scrapeOnly++
		}
	}
	return lines, scrapeOnly, nil
}

// nodeName is the name of replica n.
func nodeName(n int) string { return fmt.Sprintf("hgx-%04d", n) }

// replicaLabels is series i's label set on replica n: the node name replaced in
// every value that is the template node's name, and each GPU UUID made unique
// per node (the same PCI layout, different boards).
func (t *template) replicaLabels(i, n int) []prompb.Label {
	src := t.series[i].labels
	ls := make([]prompb.Label, len(src))
	name := nodeName(n)
	for k, l := range src {
		v := l.Value
		switch {
		case v == t.node:
			v = name
		case strings.HasPrefix(v, "GPU-") && len(v) == 40:
			h := fnv.New64a()
			h.Write([]byte(name))
			h.Write([]byte(v))
			x := h.Sum64()
			v = fmt.Sprintf("GPU-%08x-%04x%s", uint32(x), uint16(x>>32), v[17:])
		}
		ls[k] = prompb.Label{Name: l.Name, Value: v}
	}
	return ls
}

// value is series i's value on replica n in cycle c (any c ≥ 0): the template
// cycles are replayed from an offset per node, and counters keep growing across
// the wrap (each lap adds the template's whole increase plus one step).
func (t *template) value(i, n, c int) float64 {
	k := len(t.values)
	pos := c + n*7
	v := t.values[pos%k][i]
	if !t.series[i].counter || k < 2 {
		return v
	}
	first, last := t.values[0][i], t.values[k-1][i]
	lap := last - first + (last-t.values[k-2][i])/2
	if lap < 0 {
		lap = 0
	}
	return v + float64(pos/k)*lap
}

// writeRequest builds replica n's remote-write request for cycle c at time ms:
// one sample per series, as an agent's shipper sends a full cycle.
func (t *template) writeRequest(n, c int, ms int64) *prompb.WriteRequest {
	wr := &prompb.WriteRequest{Timeseries: make([]prompb.TimeSeries, len(t.series))}
	for i := range t.series {
		wr.Timeseries[i] = prompb.TimeSeries{
			Labels:  t.replicaLabels(i, n),
			Samples: []prompb.Sample{{Value: t.value(i, n, c), Timestamp: ms}},
		}
	}
	return wr
}

// metricNames counts the template's series per metric name.
func (t *template) metricNames() map[string]int {
	m := map[string]int{}
	for _, s := range t.series {
		m[seriesName(s.labels)]++
	}
	return m
}

// seriesName is the value of __name__ in ls.
func seriesName(ls []prompb.Label) string {
	for _, l := range ls {
		if l.Name == "__name__" {
			return l.Value
		}
	}
	return ""
}
