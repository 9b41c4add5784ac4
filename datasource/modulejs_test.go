package datasource_test

import (
	"bytes"
	"encoding/json"
	"net/url"
	"os"
	"os/exec"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/analyzer/report"
	"github.com/gpuwatch/gpuwatch/datasource"
)

// moduleRun is what testdata/modulejs_harness.js saw of module.js.
type moduleRun struct {
	ExportsPlugin  bool                `json:"exportsPlugin"`
	ExtendsBackend bool                `json:"extendsBackend"`
	QueryTypes     []string            `json:"queryTypes"`
	FaultTables    []string            `json:"faultTables"`
	Groupings      []string            `json:"groupings"`
	DefaultQuery   json.RawMessage     `json:"defaultQuery"`
	Editors        map[string][]string `json:"editors"`
	Edited         map[string]struct {
		Query json.RawMessage `json:"query"`
		Runs  int             `json:"runs"`
	} `json:"edited"`
	Templated      map[string]string          `json:"templated"`
	TemplatedLists map[string]json.RawMessage `json:"templatedLists"`
	HiddenFiltered bool                       `json:"hiddenFiltered"`
	ConfigControls []string                   `json:"configControls"`
	Config         struct {
		URL            string            `json:"url"`
		JSONData       map[string]any    `json:"jsonData"`
		SecureJSONData map[string]string `json:"secureJsonData"`
	} `json:"config"`
	ConfiguredTokenHidden bool `json:"configuredTokenHidden"`
	AfterReset            struct {
		SecureJSONFields map[string]bool `json:"secureJsonFields"`
	} `json:"afterReset"`
}

// TestModuleJS loads the hand-written front end in Node.js with stand-ins for
// the modules Grafana shares, and holds it to the backend: the same query
// types, faults tables and groupings; an editor per type with its fields;
// every query a person can make in it is one ParseQuery accepts and turns
// into a call; template variables replaced; the token kept in
// secureJsonData, never in jsonData.
func TestModuleJS(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		if os.Getenv("GPUWATCH_REQUIRE_NODE") == "1" {
			t.Fatalf("Node.js is needed to load module.js (make test-deps installs it): %v", err)
		}
		t.Skip("no Node.js (apt-get install nodejs; GPUWATCH_REQUIRE_NODE=1 fails instead)")
	}
	out, err := exec.Command(node, "testdata/modulejs_harness.js", "plugin/module.js").Output()
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			t.Fatalf("node: %v\n%s", err, ee.Stderr)
		}
		t.Fatal(err)
	}
	var m moduleRun
	if err := json.Unmarshal(out, &m); err != nil {
		t.Fatalf("the harness's output: %v\n%s", err, out)
	}
	if !m.ExportsPlugin || !m.ExtendsBackend {
		t.Errorf("module.js exports a DataSourcePlugin: %v; its data source extends DataSourceWithBackend: %v", m.ExportsPlugin, m.ExtendsBackend)
	}
	var groupings []string
	for _, b := range report.Dimensions {
		groupings = append(groupings, string(b))
	}
	for _, c := range []struct {
		name      string
		got, want []string
	}{{"query types", m.QueryTypes, datasource.QueryTypes}, {"faults tables", m.FaultTables, datasource.FaultTables}, {"groupings", m.Groupings, groupings}} {
		if !reflect.DeepEqual(c.got, c.want) {
			t.Errorf("module.js's %s %q, the backend's %q", c.name, c.got, c.want)
		}
	}
	if _, err := datasource.ParseQuery(m.DefaultQuery, ""); err != nil {
		t.Errorf("the default query %s: %v", m.DefaultQuery, err)
	}
	wantFields := map[string][]string{
		datasource.TypeReport:   {"Query type", "Group by", "Accounts", "Users", "Step", "Idle below", "Idle for", "Window"},
		datasource.TypeJobStats: {"Query type", "Job id", "Idle below", "Idle for", "Window"},
		datasource.TypeFaults:   {"Query type", "Faults table", "Window"}, datasource.TypeStragglers: {"Query type", "Job id", "Min gap", "Min duration", "Window"},
		datasource.TypeExplain: {"Query type", "Decision id"}, datasource.TypeDrains: {"Query type", "Limit", "Window"},
		datasource.TypeFairShare: {"Query type"},
	}
	if !reflect.DeepEqual(m.Editors, wantFields) {
		t.Errorf("the query editor's fields by type\n got %q\nwant %q", m.Editors, wantFields)
	}
	to := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	for _, typ := range datasource.QueryTypes {
		e, ok := m.Edited[typ]
		if !ok {
			t.Errorf("%s: not edited", typ)
			continue
		}
		q, err := datasource.ParseQuery(e.Query, "")
		if err != nil {
			t.Errorf("%s: the editor made %s, which the backend refuses: %v", typ, e.Query, err)
			continue
		}
		if q.QueryType != typ {
			t.Errorf("%s: the editor made a %s query", typ, q.QueryType)
		}
		// Every field typed in arrives: the harness typed a value into each.
		var compact bytes.Buffer
		if err := json.Compact(&compact, e.Query); err != nil {
			t.Fatal(err)
		}
		for _, f := range wantFields[typ][1:] {
			if !strings.Contains(compact.String(), map[string]string{"Group by": `"by":"model"`, "Step": `"1m"`, "Idle below": `"10%"`, "Idle for": `"45m"`,
				"Window": `"7d"`, "Accounts": `"account":"nlp,vision"`, "Users": `"user":"bob"`, "Job id": `"4242"`, "Faults table": `"nvlink"`, "Min gap": `"20%"`, "Min duration": `"3m"`, "Decision id": `"d-7"`, "Limit": `"limit":25`}[f]) {
				t.Errorf("%s: field %s did not reach the query %s", typ, f, compact.String())
			}
		}
		if e.Runs == 0 {
			t.Errorf("%s: editing never ran the query", typ)
		}
		if _, err := datasource.RequestPath(q, to.Add(-time.Hour), to); err != nil {
			t.Errorf("%s: %s cannot be asked: %v", typ, e.Query, err)
		}
	}
	if m.Templated["jobId"] != "4242" || m.Templated["window"] != "24h" || m.Templated["idleBelow"] != "5%" {
		t.Errorf("template variables: %v, want jobId 4242 and window 24h", m.Templated)
	}
	// The report's lists reach the backend comma-separated, All as every
	// allocation (no filter), and become the API's repeated parameters.
	for name, want := range map[string]string{
		"dashboard":         "user=bob&user=carol",
		"plain syntax":      "account=nlp&user=bob&user=carol",
		"scoped":            "account=vision&account=cv",
		"array and literal": "account=nlp&account=cv&user=eve&user=bob&user=carol",
		"empty":             "",
	} {
		raw, ok := m.TemplatedLists[name]
		if !ok {
			t.Errorf("lists %s: not templated", name)
			continue
		}
		q, err := datasource.ParseQuery(raw, "")
		if err != nil {
			t.Errorf("lists %s: %s: %v", name, raw, err)
			continue
		}
		path, err := datasource.RequestPath(q, to.Add(-time.Hour), to)
		if err != nil {
			t.Errorf("lists %s: %s: %v", name, raw, err)
			continue
		}
		u, _ := url.Parse(path)
		v := u.Query()
		got := url.Values{}
		for _, p := range []string{report.ParamAccount, report.ParamUser, report.ParamNamespace} {
			if len(v[p]) > 0 {
				got[p] = v[p]
			}
		}
		// Encode sorts the parameters, not their values: order kept.
		if enc := got.Encode(); enc != want {
			t.Errorf("lists %s: %s asks %q, want %q", name, raw, enc, want)
		}
	}
	if !m.HiddenFiltered {
		t.Errorf("a hidden query is not filtered out")
	}
	if want := []string{"URL", "Token", "CA certificate", "Skip certificate verification", "Timeout"}; !reflect.DeepEqual(m.ConfigControls, want) {
		t.Errorf("config editor fields %q, want %q", m.ConfigControls, want)
	}
	c := m.Config
	if c.URL != "https://gpuwatch.example:9402" || c.SecureJSONData[datasource.SecureToken] != "s3cret" ||
		!strings.HasPrefix(c.SecureJSONData[datasource.SecureTLSCACert], "-----BEGIN") || c.JSONData["timeoutSeconds"] != 120.0 || c.JSONData["tlsSkipVerify"] != true {
		t.Errorf("config editor sent %+v", c)
	}
	for k, v := range c.JSONData {
		if s, ok := v.(string); ok && s == "s3cret" {
			t.Errorf("the token went into jsonData.%s, which Grafana stores in clear", k)
		}
	}
	if !m.ConfiguredTokenHidden || m.AfterReset.SecureJSONFields[datasource.SecureToken] {
		t.Errorf("a configured token: hidden %v, after reset %+v", m.ConfiguredTokenHidden, m.AfterReset)
	}
}
