package agent

import (
	"bytes"
	"flag"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/collector/simhw"
)

// update rewrites the golden files in testdata (make update-golden).
var update = flag.Bool("update", false, "rewrite testdata/metrics-hgx-h100.txt from the current code")

const goldenMetrics = "testdata/metrics-hgx-h100.txt"

// TestMetricsGolden is the whole agent's /metrics on a simulated HGX H100 with a
// fixed seed and a fixed clock, compared line for line with
// testdata/metrics-hgx-h100.txt (like node_exporter's end-to-end fixture): a
// training job on GPUs 0-3 spanning nodes, an inference job on GPUs 4-5, an
// idle-hold job on GPU 6, and GPU 7 free with a double-bit ECC error, read
// through the simulated NVML, DCGM, sysfs and kernel log after two full
// collections. What differs from run to run is masked: the Go runtime's and
// the process's own series are left out, and the collection durations, the Go
// version and the VCS revision read as placeholders. Any other change of a
// name, label or value shows in the diff; when it is meant, rewrite the file
// with go test ./collector/agent/ -run MetricsGolden -update (or make
// update-golden) and review it.
func TestMetricsGolden(t *testing.T) {
	start := time.Date(2026, 3, 2, 8, 0, 0, 0, time.UTC)
	s := newSimAgentWith(t, simhw.FleetSpec{Seed: 42, Start: start}, func(n *simhw.Node) error {
		for _, j := range []struct {
			job  simhw.Job
			gpus []int
		}{
			{simhw.Job{ID: "4101", Account: "llm", User: "ana", Kind: simhw.JobTraining, MultiNode: true}, []int{0, 1, 2, 3}},
			{simhw.Job{ID: "4102", Account: "serving", User: "bo", Kind: simhw.JobInference}, []int{4, 5}},
			{simhw.Job{ID: "4103", Account: "research", User: "cy", Kind: simhw.JobIdleHold}, []int{6}},
		} {
			if err := n.StartJob(j.job, j.gpus...); err != nil {
				return err
			}
		}
		return n.Inject(simhw.Fault{GPU: 7, Kind: simhw.FaultECCDBE})
	}, func(o *Options) {
		o.Version = "golden"
		o.Timeout = time.Minute // a loaded machine must not time a source out
	})
	s.step(0)
	s.step(10 * time.Second)
	s.step(10 * time.Second)
	code, raw := s.get("/metrics")
	if code != 200 {
		t.Fatalf("/metrics: %d\n%s", code, raw)
	}
	got := normalizeMetrics(raw)
	if *update {
		if err := os.WriteFile(goldenMetrics, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(goldenMetrics)
	if err != nil {
		t.Fatalf("%v (create it with -update)", err)
	}
	if bytes.Equal(got, want) {
		return
	}
	gl, wl := strings.Split(string(got), "\n"), strings.Split(string(want), "\n")
	have := map[string]bool{}
	for _, l := range gl {
		have[l] = true
	}
	wanted := map[string]bool{}
	for _, l := range wl {
		wanted[l] = true
	}
	n := 0
	for _, l := range wl {
		if !have[l] && n < 40 {
			t.Errorf("- %s", l)
			n++
		}
	}
	for _, l := range gl {
		if !wanted[l] && n < 80 {
			t.Errorf("+ %s", l)
			n++
		}
	}
	t.Errorf("/metrics differs from %s (- golden, + now; %d and %d lines): if the change is meant, run go test ./collector/agent/ -run MetricsGolden -update and review the diff",
		goldenMetrics, len(wl), len(gl))
}

var (
	// scrapeOnly are the families the HTTP handler adds at scrape time.
	scrapeOnly = regexp.MustCompile(`^(# (HELP|TYPE) )?(go|process|promhttp)_`)
	// durations are the collection durations, wall-clock time.
	durations   = regexp.MustCompile(`^(gpuwatch_source_duration_seconds\{[^}]*\}) \S+$`)
	goVersion   = regexp.MustCompile(`go_version="[^"]*"`)
	vcsRevision = regexp.MustCompile(`revision="[^"]*"`)
)

// normalizeMetrics drops the scrape-only families, masks what differs from run
// to run, and sorts each family's series (the exposition format leaves their
// order open, and some sources emit theirs in map order).
func normalizeMetrics(raw []byte) []byte {
	var out bytes.Buffer
	var series []string
	flush := func() {
		slices.Sort(series)
		for _, l := range series {
			out.WriteString(l + "\n")
		}
		series = series[:0]
	}
	for _, l := range strings.Split(strings.TrimRight(string(raw), "\n"), "\n") {
		if scrapeOnly.MatchString(l) {
			continue
		}
		if strings.HasPrefix(l, "#") {
			flush()
			out.WriteString(l + "\n")
			continue
		}
		l = durations.ReplaceAllString(l, "$1 DURATION")
		l = goVersion.ReplaceAllString(l, `go_version="GO_VERSION"`)
		l = vcsRevision.ReplaceAllString(l, `revision="REVISION"`)
		series = append(series, l)
	}
	flush()
	return out.Bytes()
}
