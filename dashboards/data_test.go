package dashboards_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"os"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/prometheus/promql/parser"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	extenderv1 "k8s.io/kube-scheduler/extender/v1"

	"github.com/gpuwatch/gpuwatch/analyzer/report"
	"github.com/gpuwatch/gpuwatch/dashboards/internal/defs"
	"github.com/gpuwatch/gpuwatch/dashboards/internal/grafana"
	"github.com/gpuwatch/gpuwatch/internal/demo"
	"github.com/gpuwatch/gpuwatch/internal/server"
)

// The simulated fleet the data test fills the store with.
const (
	fleetNodes     = 8
	gpusPerNode    = 8
	fleetLeaves    = 2
	fleetDuration  = 10 * time.Minute
	scrapeInterval = 10 * time.Second // the data source's timeInterval (deploy/grafana)
	dcgmUID        = "Oxed_c6Wz"      // dcgm-exporter's dashboard
)

// expectedEmpty lists the panels ("uid/title") that come back empty on the
// simulated fleet, each with why. The test fails when the panels that come back
// empty are not exactly these: when what an entry waits for lands, its panel
// has data and the entry must go.
var expectedEmpty = map[string]string{}

// knownFailures lists the other problems ("uid/what") the test expects, each
// with why; like expectedEmpty it must match exactly, so an entry goes when it
// is fixed.
var knownFailures = map[string]string{}

// fleetRun is the simulated fleet's run, shared by the data tests.
type fleetRun struct {
	api        *grafana.API
	start, end time.Time
	nodes      []string
	extender   int // kube-scheduler extender calls made during the run
	err        error
	stop       func()
}

func TestMain(m *testing.M) {
	code := m.Run()
	if theFleet.stop != nil {
		theFleet.stop()
	}
	os.Exit(code)
}

var (
	fleetOnce sync.Once
	theFleet  fleetRun
)

// runFleet plays testdata/story.yaml on an 8-node simulated fleet (two leaves)
// for ten simulated minutes through `gpuwatch demo`'s machinery: real agents
// remote-writing to an in-process gpuwatch server with its embedded store, the
// built-in rules plus the fleet recording rules evaluating on the simulated
// clock, the drain controller with the log actuator (node-04's reboot refused,
// so it is drained instead), placement of the simulated workload through the
// server, fair share with the demo's accounts, and the server's own series
// scraped into its store. Meanwhile the test plays kube-scheduler calling the
// extender. The server is kept serving for the queries, which go through its
// front door with the demo's read-only (Grafana) token.
func runFleet(t *testing.T) *fleetRun {
	t.Helper()
	fleetOnce.Do(func() {
		story, err := os.ReadFile("testdata/story.yaml")
		if err != nil {
			theFleet.err = err
			return
		}
		ctx, cancel := context.WithCancel(context.Background())
		var out bytes.Buffer
		started, done := make(chan demo.Serving, 1), make(chan demo.Serving, 1)
		errc := make(chan error, 1)
		go func() {
			_, err := demo.Run(ctx, demo.Options{
				Nodes: fleetNodes, NodesPerLeaf: fleetNodes / fleetLeaves, Duration: fleetDuration, Speed: -1,
				Faults: story, FaultsName: "testdata/story.yaml",
				RefuseReboot: map[string]string{"node-04": "no RebootProgram for this node's rack"},
				Rules:        []string{fleetRulesFile},
				ServerListen: "127.0.0.1:0", KeepServing: true, Out: &out,
				Serving: func(s demo.Serving) {
					if s.Done == nil {
						started <- s
					} else {
						done <- s
					}
				},
			})
			errc <- err
		}()
		fail := func(err error) {
			cancel()
			<-errc
			theFleet.err = fmt.Errorf("%w\n%s", err, out.String())
		}
		var s demo.Serving
		select {
		case s = <-started:
		case err := <-errc:
			theFleet.err = fmt.Errorf("demo: %v\n%s", err, out.String())
			cancel()
			return
		}
		secret, err := os.ReadFile(s.GrafanaTokenFile)
		if err != nil {
			fail(err)
			return
		}
		auth := "Bearer " + strings.TrimSpace(string(secret))
		stopKube := make(chan struct{})
		kubeDone := make(chan int)
		go func() { kubeDone <- playKubeScheduler(s.URL, auth, stopKube) }()
		select {
		case s = <-done:
		case err := <-errc:
			close(stopKube)
			<-kubeDone
			theFleet.err = fmt.Errorf("demo: %v\n%s", err, out.String())
			cancel()
			return
		case <-time.After(5 * time.Minute):
			close(stopKube)
			<-kubeDone
			fail(fmt.Errorf("the demo did not finish in 5 minutes"))
			return
		}
		close(stopKube)
		theFleet.extender = <-kubeDone
		theFleet.api = &grafana.API{URL: s.URL, Authorization: auth, Client: &http.Client{Timeout: 30 * time.Second}}
		theFleet.start, theFleet.end = s.Start, s.Start.Add(s.Done.Simulated)
		for _, n := range s.Done.Nodes {
			theFleet.nodes = append(theFleet.nodes, n.Name)
		}
		// The server keeps serving until TestMain stops it.
		theFleet.stop = func() { cancel(); <-errc }
	})
	if theFleet.err != nil {
		t.Fatal(theFleet.err)
	}
	return &theFleet
}

// playKubeScheduler calls the server's kube-scheduler extender as
// kube-scheduler would for pods asking for a GPU, filter then prioritize,
// until stop; every tenth pod carries a malformed gpuwatch annotation, which
// the extender answers by failing open. It returns the calls made.
func playKubeScheduler(url, auth string, stop <-chan struct{}) int {
	names := make([]string, fleetNodes)
	for i := range names {
		names[i] = fmt.Sprintf("node-%02d", i+1)
	}
	c := &http.Client{Timeout: 10 * time.Second}
	calls := 0
	for i := 0; ; i++ {
		select {
		case <-stop:
			return calls
		case <-time.After(100 * time.Millisecond):
		}
		pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("train-%d", i), Namespace: "ml", UID: "uid"},
			Spec: v1.PodSpec{Containers: []v1.Container{{Name: "main", Resources: v1.ResourceRequirements{
				Limits: v1.ResourceList{"nvidia.com/gpu": resource.MustParse("1")}}}}}}
		if i%10 == 9 {
			pod.Annotations = map[string]string{"gpuwatch.io/milli-gpu": "a lot"}
		}
		body, _ := json.Marshal(extenderv1.ExtenderArgs{Pod: pod, NodeNames: &names})
		for _, verb := range []string{"filter", "prioritize"} {
			req, _ := http.NewRequest(http.MethodPost, url+server.APIPrefix+"/extender/"+verb, bytes.NewReader(body))
			req.Header.Set("Authorization", auth)
			req.Header.Set("Content-Type", "application/json")
			if resp, err := c.Do(req); err == nil {
				resp.Body.Close()
				calls++
			}
		}
	}
}

// problem is something wrong with a dashboard on the fleet's data.
type problem struct {
	key    string // uid/what: matched against expectedEmpty and knownFailures
	detail string
	empty  bool // a panel with no data
}

// checker runs one dashboard's variables and queries against the fleet's store
// as Grafana would over the run's time range.
type checker struct {
	t     *testing.T
	fleet *fleetRun
	d     *grafana.Dashboard
	ctx   context.Context
	parse parser.Parser

	problems []problem
	reported map[string]bool
}

func (c *checker) problem(key, detail string, empty bool) {
	key = c.d.UID + "/" + key
	if c.reported[key] {
		return
	}
	c.reported[key] = true
	c.problems = append(c.problems, problem{key: key, detail: detail, empty: empty})
}

// selections are the dashboard's variable settings to query with: each
// multi-value variable at All, each single-value variable at each of its
// options in turn (so a panel about one node or GPU is empty only if it is
// empty for every node or GPU).
func (c *checker) selections() []map[string]grafana.Selection {
	var out []map[string]grafana.Selection
	var walk func(i int, sel map[string]grafana.Selection)
	walk = func(i int, sel map[string]grafana.Selection) {
		if i == len(c.d.Variables) {
			cp := map[string]grafana.Selection{}
			for k, v := range sel {
				cp[k] = v
			}
			out = append(out, cp)
			return
		}
		v := c.d.Variables[i]
		switch v.Type {
		case "datasource":
			sel[v.Name] = grafana.Selection{Values: []string{"gpuwatch"}}
			walk(i+1, sel)
			return
		case "query":
		default:
			c.problem("variable "+v.Name, fmt.Sprintf("variable type %q is not supported by this test", v.Type), false)
			return
		}
		opts, err := c.options(&v, sel)
		if err != nil {
			c.problem("variable "+v.Name, err.Error(), false)
			return
		}
		c.checkOptions(&v, opts)
		switch {
		case v.IncludeAll:
			sel[v.Name] = grafana.Selection{Values: opts, All: true}
			walk(i+1, sel)
		case v.Multi || len(opts) == 0:
			sel[v.Name] = grafana.Selection{Values: opts[:min(1, len(opts))]}
			walk(i+1, sel)
		default:
			for _, o := range opts {
				sel[v.Name] = grafana.Selection{Values: []string{o}}
				walk(i+1, sel)
			}
		}
		delete(sel, v.Name)
	}
	walk(0, map[string]grafana.Selection{})
	return out
}

// options resolves a query variable through the label-values API.
func (c *checker) options(v *grafana.Variable, sel map[string]grafana.Selection) ([]string, error) {
	lv, err := grafana.ParseLabelValues(v.Query)
	if err != nil {
		return nil, err
	}
	match := lv.Match
	if match != "" {
		if match, err = c.scope(sel).Interpolate(match); err != nil {
			return nil, err
		}
	}
	values, err := c.fleet.api.LabelValues(c.ctx, lv.Label, match, c.fleet.start, c.fleet.end)
	if err != nil {
		return nil, err
	}
	return v.Options(values)
}

// checkOptions: a variable lists something, and a node (or instance)
// variable lists every node, a GPU variable every GPU of a node, a leaf
// variable every leaf.
func (c *checker) checkOptions(v *grafana.Variable, opts []string) {
	lv, _ := grafana.ParseLabelValues(v.Query)
	want := map[string]int{"node": fleetNodes, "instance": fleetNodes, "gpu": gpusPerNode, "gpu_index": gpusPerNode, "leaf": fleetLeaves}[lv.Label]
	switch {
	case len(opts) == 0:
		detail := fmt.Sprintf("variable $%s lists no values: %s", v.Name, v.Query)
		if e, err := c.parse.ParseExpr(lv.Match); lv.Match != "" && err == nil {
			for _, name := range metricNames(e) {
				labels, err := c.fleet.api.LabelNames(c.ctx, name, c.fleet.start, c.fleet.end)
				if err == nil && len(labels) > 0 {
					detail += fmt.Sprintf("; the store's %s series carry the labels %s, and no %s", name, strings.Join(labels, ", "), lv.Label)
				}
			}
		}
		c.problem("variable "+v.Name, detail, false)
	case want > 0 && len(opts) != want:
		c.problem("variable "+v.Name, fmt.Sprintf("lists %d values %v, want %d", len(opts), opts, want), false)
	}
}

func (c *checker) scope(sel map[string]grafana.Selection) *grafana.Scope {
	s := grafana.NewScope(c.d.Variables, c.fleet.end.Sub(c.fleet.start), 1000, scrapeInterval)
	s.Selected = sel
	return s
}

// fieldRE finds the series labels a data link reads.
var fieldRE = regexp.MustCompile(`\$\{__(?:field\.labels|data\.fields)\.([A-Za-z_][A-Za-z0-9_]*)\}`)

// pluginQuery asks the server what the gpuwatch data source asks it for a
// query of that data source over the run's window (the mapping of
// datasource/query.go, whose own tests run every query type through the
// plugin), and says why there is no data. Only the report's queries are
// known here; a dashboard that uses another query type adds it.
//
// The report's account and user fields are replaced under each selection as
// the data source's front end does (module.js): a variable at All is no
// filter, otherwise its values comma-separated; each selection, and each with
// a multi-value variable narrowed to its first value (a team lead's pick),
// must have data, and a narrowed report only the picked keys.
func (c *checker) pluginQuery(tg grafana.Target, sels []map[string]grafana.Selection) error {
	if tg.Datasource.Type != defs.PluginType {
		return fmt.Errorf("a query of data source type %q, which the data test cannot ask", tg.Datasource.Type)
	}
	var q struct {
		QueryType, By, Step string
		Account, User       string
	}
	if err := json.Unmarshal(tg.Raw, &q); err != nil {
		return err
	}
	if q.QueryType != "report" {
		return fmt.Errorf("a gpuwatch data source query of type %q, which the data test does not ask yet", q.QueryType)
	}
	var all []map[string]grafana.Selection
	for _, sel := range sels {
		all = append(all, sel)
		for _, name := range []string{"account", "user"} {
			if s, ok := sel[name]; ok && s.All && len(s.Values) > 0 {
				narrow := maps.Clone(sel)
				narrow[name] = grafana.Selection{Values: s.Values[:1]}
				all = append(all, narrow)
			}
		}
	}
	var step time.Duration
	if q.Step != "" {
		var err error
		if step, err = time.ParseDuration(q.Step); err != nil {
			return fmt.Errorf("step: %w", err)
		}
	}
	for _, sel := range all {
		o := report.Options{From: c.fleet.start, To: c.fleet.end, By: report.By(q.By), Step: step}
		for _, f := range []struct {
			field string
			into  *[]string
		}{{q.Account, &o.Filter.Accounts}, {q.User, &o.Filter.Users}} {
			vals, err := c.pluginList(f.field, sel)
			if err != nil {
				return err
			}
			*f.into = vals
		}
		v := o.Query()
		var r struct {
			Groups []struct {
				Key       string  `json:"key"`
				Allocated float64 `json:"allocated_gpu_hours"`
			} `json:"groups"`
		}
		if err := c.fleet.api.GetJSON(c.ctx, server.APIPrefix+"/report", v, &r); err != nil {
			return fmt.Errorf("report %s: %w", v.Encode(), err)
		}
		found := false
		for _, g := range r.Groups {
			found = found || g.Allocated > 0
			if kept := v[q.By]; len(kept) > 0 && !slices.Contains(kept, g.Key) {
				return fmt.Errorf("report %s: a row %q not picked", v.Encode(), g.Key)
			}
		}
		if !found {
			return fmt.Errorf("report %s over the run: no group with allocated GPU-hours (%d groups)", v.Encode(), len(r.Groups))
		}
	}
	return nil
}

// pluginList is a report list field under sel, as module.js sends it: none
// when a variable in it is at All, else the comma-separated values.
func (c *checker) pluginList(field string, sel map[string]grafana.Selection) ([]string, error) {
	for _, m := range listVarRE.FindAllStringSubmatch(field, -1) {
		if s, ok := sel[m[1]+m[3]]; ok && s.All {
			return nil, nil
		}
	}
	out, err := c.scope(sel).Interpolate(field)
	if err != nil || strings.TrimSpace(out) == "" {
		return nil, err
	}
	vals := strings.Split(out, ",")
	for i := range vals {
		vals[i] = strings.TrimSpace(vals[i])
	}
	return vals, nil
}

// run queries every panel under every selection until each query has data.
func (c *checker) run() {
	sels := c.selections()
	if len(sels) == 0 {
		return
	}
	for _, p := range c.d.Panels {
		labels := map[string]bool{}
		var empty []string
		for _, tg := range p.Targets {
			if tg.Hide {
				continue
			}
			if !tg.PromQL() {
				if err := c.pluginQuery(tg, sels); err != nil {
					empty = append(empty, tg.RefID+": "+err.Error())
				}
				continue
			}
			found := false
			for _, sel := range sels {
				expr, err := c.scope(sel).Interpolate(tg.Expr)
				if err != nil {
					c.problem(p.Title+"/"+tg.RefID, err.Error(), false)
					break
				}
				var res []grafana.Series
				if tg.Instant {
					res, err = c.fleet.api.Query(c.ctx, expr, c.fleet.end)
				} else {
					res, err = c.fleet.api.QueryRange(c.ctx, expr, c.fleet.start, c.fleet.end, c.scope(sel).Interval)
				}
				if err != nil {
					c.problem(p.Title+"/"+tg.RefID, fmt.Sprintf("query %s: %v", expr, err), false)
					break
				}
				if !grafana.Empty(res) {
					found = true
					for _, s := range res {
						for k := range s.Labels {
							labels[k] = true
						}
					}
					break
				}
			}
			if !found {
				empty = append(empty, tg.RefID+": "+tg.Expr)
			}
		}
		if len(empty) > 0 {
			c.problem(p.Title, fmt.Sprintf("no data for %d selection(s) of the variables from: %s", len(sels), strings.Join(empty, " | ")), true)
			continue
		}
		for _, l := range append(append([]string{}, p.DataLinks...), p.Links...) {
			for _, m := range fieldRE.FindAllStringSubmatch(l, -1) {
				if !labels[m[1]] {
					c.problem(p.Title+"/link "+m[1], fmt.Sprintf("link %s reads label %s, which the panel's series do not carry", l, m[1]), false)
				}
			}
		}
	}
}

// TestPanelsHaveData: every panel of every dashboard, dcgm-exporter's
// included, returns data from a store that simulated agents filled while
// playing a fault story, with Grafana's variable semantics; except the
// panels and problems listed, with why, in expectedEmpty and knownFailures.
func TestPanelsHaveData(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a simulated fleet for ten simulated minutes")
	}
	f := runFleet(t)
	t.Logf("simulated %s to %s on %d nodes; %d kube-scheduler extender calls", f.start.Format(time.RFC3339), f.end.Format(time.RFC3339), len(f.nodes), f.extender)
	p := parser.NewParser(parser.Options{})
	t.Run("the checker itself", func(t *testing.T) {
		// A panel with no data and a link reading a label the series lack are
		// reported; a panel with data and a good link are not.
		d := &grafana.Dashboard{UID: "selftest", Panels: []grafana.Panel{
			{Title: "absent", Targets: []grafana.Target{{RefID: "A", Expr: "gpuwatch_no_such_series"}}},
			{Title: "present", Targets: []grafana.Target{{RefID: "A", Expr: "gpuwatch_node_health_state"}},
				DataLinks: []string{"/d/x?var-node=${__field.labels.node}&var-gpu=${__field.labels.gpu_index}"}},
		}}
		c := &checker{t: t, fleet: f, d: d, ctx: context.Background(), parse: p, reported: map[string]bool{}}
		c.run()
		var got []string
		for _, pr := range c.problems {
			got = append(got, pr.key)
		}
		sort.Strings(got)
		if want := []string{"selftest/absent", "selftest/present/link gpu_index"}; fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("problems %v, want %v", got, want)
		}
	})
	seen := map[string]bool{}
	for _, b := range loadBoards(t) {
		t.Run(b.UID, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			c := &checker{t: t, fleet: f, d: b.Dashboard, ctx: ctx, parse: p, reported: map[string]bool{}}
			c.run()
			sort.Slice(c.problems, func(i, j int) bool { return c.problems[i].key < c.problems[j].key })
			for _, pr := range c.problems {
				seen[pr.key] = true
				switch why, ok := expectedEmpty[pr.key]; {
				case ok && pr.empty:
					t.Logf("expected empty: %s (%s)", pr.key, why)
					continue
				}
				if why, ok := knownFailures[pr.key]; ok && !pr.empty {
					t.Logf("KNOWN GAP %s (%s): %s", pr.key, why, pr.detail)
					continue
				}
				t.Errorf("%s: %s", pr.key, pr.detail)
			}
			n := 0
			for _, pn := range b.Panels {
				if !seen[b.UID+"/"+pn.Title] {
					n++
				}
			}
			t.Logf("%s: %d of %d panels have data", b.file, n, len(b.Panels))
		})
	}
	for _, list := range []map[string]string{expectedEmpty, knownFailures} {
		for key, why := range list {
			if !seen[key] {
				t.Errorf("%s is listed as a known gap (%s) but did not occur: it is fixed, remove it from the list", key, why)
			}
		}
	}
}

// TestServerSeriesStored: every server series a dashboard reads is one the
// running server exposes and the store holds (through the demo's scrape of the
// server), so the allowlist from docs/metrics.md is not stale.
func TestServerSeriesStored(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a simulated fleet")
	}
	f := runFleet(t)
	c := loadCatalog(t)
	stored, err := f.api.LabelValues(context.Background(), "__name__", "", f.start, f.end)
	if err != nil {
		t.Fatal(err)
	}
	have := map[string]bool{}
	for _, n := range stored {
		have[n] = true
	}
	p := parser.NewParser(parser.Options{})
	used := map[string]bool{}
	for _, b := range loadBoards(t) {
		s := placeholderScope(b.Dashboard)
		for _, pn := range b.Panels {
			for _, tg := range pn.Targets {
				if !tg.PromQL() {
					continue
				}
				expr, err := s.Interpolate(tg.Expr)
				if err != nil {
					continue
				}
				if e, err := p.ParseExpr(expr); err == nil {
					for _, n := range metricNames(e) {
						if c.serverName(n) != "" {
							used[n] = true
						}
					}
				}
			}
		}
	}
	if len(used) == 0 {
		t.Fatal("no dashboard reads a server series")
	}
	for n := range used {
		if !have[n] {
			t.Errorf("%s is documented as the server's (docs/metrics.md) and a dashboard reads it, but the store has no such series after the run", n)
		}
	}
	t.Logf("%d server series read by the dashboards, all stored", len(used))
}
