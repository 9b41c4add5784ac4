package k8s

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	kubeschedulerconfigv1 "k8s.io/kube-scheduler/config/v1"
	"sigs.k8s.io/yaml"

	"github.com/gpuwatch/gpuwatch/internal/auth"
	"github.com/gpuwatch/gpuwatch/scheduler/adapters/kube"
)

// chartDir is the chart, relative to this package.
const chartDir = "../../deploy/helm/gpuwatch"

// The release the tests install: its server's ServiceAccount is
// gpuwatch-server in namespace gpuwatch.
const (
	releaseName      = "gpuwatch"
	releaseNamespace = "gpuwatch"
)

// renderedObject is one object of the rendered chart.
type renderedObject struct {
	source string // template file
	kind   string // apiVersion/kind
	name   string
	obj    any // the decoded upstream type
}

// renderChart renders the chart with values (nil: the defaults) as `helm
// template` does and decodes every object strictly (no unknown or duplicate
// field) into its upstream Go type.
func renderChart(t *testing.T, values map[string]any) []renderedObject {
	t.Helper()
	ch, err := loader.Load(chartDir)
	if err != nil {
		t.Fatalf("load chart %s: %v", chartDir, err)
	}
	if err := chartutil.ValidateAgainstSchema(ch, values); err != nil {
		t.Fatal(err)
	}
	vals, err := chartutil.ToRenderValues(ch, values, chartutil.ReleaseOptions{Name: releaseName, Namespace: releaseNamespace, IsInstall: true, Revision: 1}, chartutil.DefaultCapabilities)
	if err != nil {
		t.Fatal(err)
	}
	files, err := engine.Render(ch, vals)
	if err != nil {
		t.Fatalf("render chart: %v", err)
	}
	names := slices.Sorted(func(yield func(string) bool) {
		for k := range files {
			if !yield(k) {
				return
			}
		}
	})
	var out []renderedObject
	for _, name := range names {
		if !strings.HasSuffix(name, ".yaml") {
			continue
		}
		for _, doc := range regexp.MustCompile(`(?m)^---\s*$`).Split(files[name], -1) {
			if strings.TrimSpace(stripComments(doc)) == "" {
				continue
			}
			var tm metav1.TypeMeta
			var om struct {
				Metadata metav1.ObjectMeta `json:"metadata"`
			}
			if err := yaml.Unmarshal([]byte(doc), &tm); err != nil {
				t.Fatalf("%s: %v\n%s", name, err, doc)
			}
			if err := yaml.Unmarshal([]byte(doc), &om); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			kind := tm.APIVersion + "/" + tm.Kind
			newObj, ok := chartKinds[kind]
			if !ok {
				t.Fatalf("%s renders %s %s, a kind this test does not know: add its Go type to chartKinds", name, kind, om.Metadata.Name)
			}
			obj := newObj()
			if err := yaml.UnmarshalStrict([]byte(doc), obj); err != nil {
				t.Fatalf("%s: %s %s does not decode strictly into %T: %v", name, kind, om.Metadata.Name, obj, err)
			}
			out = append(out, renderedObject{source: name, kind: kind, name: om.Metadata.Name, obj: obj})
		}
	}
	return out
}

func stripComments(doc string) string {
	var b strings.Builder
	for _, l := range strings.Split(doc, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(l), "#") {
			b.WriteString(l + "\n")
		}
	}
	return b.String()
}

// chartKinds are the kinds the chart may render, with their upstream types.
var chartKinds = map[string]func() any{
	"v1/ServiceAccount":   func() any { return &corev1.ServiceAccount{} },
	"v1/Secret":           func() any { return &corev1.Secret{} },
	"v1/ConfigMap":        func() any { return &corev1.ConfigMap{} },
	"v1/Service":          func() any { return &corev1.Service{} },
	"apps/v1/DaemonSet":   func() any { return &appsv1.DaemonSet{} },
	"apps/v1/StatefulSet": func() any { return &appsv1.StatefulSet{} },
	"rbac.authorization.k8s.io/v1/ClusterRole":        func() any { return &rbacv1.ClusterRole{} },
	"rbac.authorization.k8s.io/v1/ClusterRoleBinding": func() any { return &rbacv1.ClusterRoleBinding{} },
	"rbac.authorization.k8s.io/v1/Role":               func() any { return &rbacv1.Role{} },
	"rbac.authorization.k8s.io/v1/RoleBinding":        func() any { return &rbacv1.RoleBinding{} },
	"monitoring.coreos.com/v1/ServiceMonitor":         func() any { return &monitoringv1.ServiceMonitor{} },
	"monitoring.coreos.com/v1/PrometheusRule":         func() any { return &monitoringv1.PrometheusRule{} },
}

func find[T any](t *testing.T, objs []renderedObject, kind, name string) T {
	t.Helper()
	for _, o := range objs {
		if o.kind == kind && o.name == name {
			return o.obj.(T)
		}
	}
	t.Fatalf("the chart renders no %s %s", kind, name)
	var zero T
	return zero
}

// TestChartRendersAndInstalls renders the chart with its default values,
// checks that it renders everything the issue asks (agent DaemonSet, server
// StatefulSet with a volume, Services, RBAC, ServiceMonitor, PrometheusRule
// with every alert of alerts/*.rules.yml, a dashboard ConfigMap per
// dashboards/*.json, the extender's KubeSchedulerConfiguration), that the
// token file it writes loads in gpuwatch's own loader, and creates every core
// object on the real API server (which validates them).
func TestChartRendersAndInstalls(t *testing.T) {
	objs := renderChart(t, nil)
	kinds := map[string]int{}
	for _, o := range objs {
		kinds[o.kind]++
	}
	t.Logf("rendered: %v", kinds)

	ds := find[*appsv1.DaemonSet](t, objs, "apps/v1/DaemonSet", "gpuwatch-agent")
	var hostPaths []string
	for _, v := range ds.Spec.Template.Spec.Volumes {
		if v.HostPath != nil {
			hostPaths = append(hostPaths, v.HostPath.Path)
		}
	}
	for _, want := range []string{"/sys", "/dev/kmsg", "/var/lib/kubelet/pod-resources"} {
		if !slices.Contains(hostPaths, want) {
			t.Errorf("agent DaemonSet mounts host paths %v, missing %s", hostPaths, want)
		}
	}
	if rc := ds.Spec.Template.Spec.RuntimeClassName; rc == nil || *rc != "nvidia" {
		t.Errorf("agent DaemonSet runtimeClassName %v, want nvidia", rc)
	}
	if !strings.Contains(strings.Join(ds.Spec.Template.Spec.Containers[0].Args, " "), "--auth.token-file=") {
		t.Errorf("agent args %v send no token", ds.Spec.Template.Spec.Containers[0].Args)
	}
	sts := find[*appsv1.StatefulSet](t, objs, "apps/v1/StatefulSet", "gpuwatch-server")
	if len(sts.Spec.VolumeClaimTemplates) != 1 {
		t.Errorf("server StatefulSet has %d volume claim templates, want 1 (the store)", len(sts.Spec.VolumeClaimTemplates))
	}
	find[*corev1.Service](t, objs, "v1/Service", "gpuwatch-server")
	find[*corev1.Service](t, objs, "v1/Service", "gpuwatch-agent")
	sm := find[*monitoringv1.ServiceMonitor](t, objs, "monitoring.coreos.com/v1/ServiceMonitor", "gpuwatch")
	scrapedOnce(t, objs, sm)

	// Every alert and recording rule of alerts/*.rules.yml is in the
	// PrometheusRule.
	pr := find[*monitoringv1.PrometheusRule](t, objs, "monitoring.coreos.com/v1/PrometheusRule", "gpuwatch")
	inChart := map[string]bool{}
	for _, g := range pr.Spec.Groups {
		for _, r := range g.Rules {
			inChart[r.Alert+r.Record] = true
		}
	}
	rulesFiles, _ := filepath.Glob("../../alerts/*.rules.yml")
	if len(rulesFiles) == 0 {
		t.Fatal("no alerts/*.rules.yml")
	}
	for _, f := range rulesFiles {
		var file monitoringv1.PrometheusRuleSpec
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := yaml.Unmarshal(data, &file); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		for _, g := range file.Groups {
			for _, r := range g.Rules {
				if !inChart[r.Alert+r.Record] {
					t.Errorf("%s: rule %s%s is not in the chart's PrometheusRule", f, r.Alert, r.Record)
				}
			}
		}
	}

	// One ConfigMap per dashboard, labelled for Grafana's sidecar, holding the
	// dashboard's JSON as it is.
	dashboards, _ := filepath.Glob("../../dashboards/*.json")
	for _, f := range dashboards {
		base := filepath.Base(f)
		cm := find[*corev1.ConfigMap](t, objs, "v1/ConfigMap", "gpuwatch-dashboard-"+strings.TrimSuffix(base, ".json"))
		want, _ := os.ReadFile(f)
		if cm.Labels["grafana_dashboard"] != "1" || strings.TrimSpace(cm.Data[base]) != strings.TrimSpace(string(want)) {
			t.Errorf("dashboard ConfigMap %s: label %q, data equal to %s: %v", cm.Name, cm.Labels["grafana_dashboard"], f,
				strings.TrimSpace(cm.Data[base]) == strings.TrimSpace(string(want)))
		}
	}

	// The data sources' provisioning decodes strictly and provisions a data
	// source of every type a dashboard's data source variable asks for (the
	// server as Prometheus, the gpuwatch-datasource plugin for the team
	// dashboard's report tables), each pointed at the server.
	dsm := find[*corev1.ConfigMap](t, objs, "v1/ConfigMap", "gpuwatch-datasource")
	var prov struct {
		APIVersion  int `json:"apiVersion"`
		Datasources []struct {
			Name, UID, Type, Access, URL string
			Editable                     bool
			JSONData                     map[string]any `json:"jsonData"`
			SecureJSONData               map[string]any `json:"secureJsonData"`
		} `json:"datasources"`
	}
	if err := yaml.UnmarshalStrict([]byte(dsm.Data["gpuwatch-datasource.yaml"]), &prov); err != nil {
		t.Fatalf("data source ConfigMap: %v", err)
	}
	provisioned := map[string]bool{}
	for _, d := range prov.Datasources {
		provisioned[d.Type] = true
		if !strings.Contains(d.URL, "gpuwatch-server") || len(d.SecureJSONData) != 1 {
			t.Errorf("data source %s (%s): url %q, secure data %v; want the server with the read token", d.Name, d.Type, d.URL, d.SecureJSONData)
		}
	}
	for _, f := range dashboards {
		raw, _ := os.ReadFile(f)
		var dash struct {
			Templating struct {
				List []struct{ Name, Type, Query string } `json:"list"`
			} `json:"templating"`
		}
		if err := yaml.Unmarshal(raw, &dash); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		for _, v := range dash.Templating.List {
			if v.Type == "datasource" && !provisioned[v.Query] {
				t.Errorf("%s: variable %s asks for a data source of type %q, which the chart does not provision (%v)", f, v.Name, v.Query, provisioned)
			}
		}
	}

	// The scheduler configuration decodes strictly as kube-scheduler's.
	sc := find[*corev1.ConfigMap](t, objs, "v1/ConfigMap", "gpuwatch-scheduler-extender")
	var kcfg kubeschedulerconfigv1.KubeSchedulerConfiguration
	if err := yaml.UnmarshalStrict([]byte(sc.Data["scheduler-config.yaml"]), &kcfg); err != nil {
		t.Fatalf("scheduler-extender ConfigMap: %v", err)
	}
	if len(kcfg.Extenders) != 1 || !strings.HasSuffix(kcfg.Extenders[0].URLPrefix, "/api/gpuwatch/v1/extender") || !kcfg.Extenders[0].Ignorable {
		t.Errorf("scheduler-extender configuration: extenders %+v", kcfg.Extenders)
	}

	// The token file loads in gpuwatch's own loader, with the agents' and
	// Grafana's secrets.
	tokens := find[*corev1.Secret](t, objs, "v1/Secret", "gpuwatch-tokens")
	tf := filepath.Join(t.TempDir(), "tokens.yaml")
	if err := os.WriteFile(tf, []byte(tokens.StringData["tokens.yaml"]), 0o600); err != nil {
		t.Fatal(err)
	}
	loaded, err := auth.LoadTokens(tf)
	if err != nil {
		t.Fatalf("the chart's token file does not load: %v\n%s", err, tokens.StringData["tokens.yaml"])
	}
	agentSecret := find[*corev1.Secret](t, objs, "v1/Secret", "gpuwatch-agent-token")
	if id, ok := loaded.Lookup(string(agentSecret.Data["token"])); !ok || id.Role != auth.RoleAgent {
		t.Errorf("the agent Secret's token is not an agent token of the token file (%v, %v)", id, ok)
	}

	// Create the core objects on the real API server, which validates them.
	ctx := context.Background()
	ns := "chart-install"
	createNamespace(t, ns)
	for _, o := range objs {
		var err error
		switch x := o.obj.(type) {
		case *corev1.ServiceAccount:
			x.Namespace = ns
			_, err = cp.client.CoreV1().ServiceAccounts(ns).Create(ctx, x, metav1.CreateOptions{FieldValidation: "Strict"})
		case *corev1.Secret:
			x.Namespace = ns
			_, err = cp.client.CoreV1().Secrets(ns).Create(ctx, x, metav1.CreateOptions{FieldValidation: "Strict"})
		case *corev1.ConfigMap:
			x.Namespace = ns
			_, err = cp.client.CoreV1().ConfigMaps(ns).Create(ctx, x, metav1.CreateOptions{FieldValidation: "Strict"})
		case *corev1.Service:
			x.Namespace = ns
			_, err = cp.client.CoreV1().Services(ns).Create(ctx, x, metav1.CreateOptions{FieldValidation: "Strict"})
		case *appsv1.DaemonSet:
			x.Namespace = ns
			_, err = cp.client.AppsV1().DaemonSets(ns).Create(ctx, x, metav1.CreateOptions{FieldValidation: "Strict"})
		case *appsv1.StatefulSet:
			x.Namespace = ns
			_, err = cp.client.AppsV1().StatefulSets(ns).Create(ctx, x, metav1.CreateOptions{FieldValidation: "Strict"})
		case *rbacv1.ClusterRole:
			x.Name = ns + "-" + x.Name
			_, err = cp.client.RbacV1().ClusterRoles().Create(ctx, x, metav1.CreateOptions{FieldValidation: "Strict"})
			defer cp.client.RbacV1().ClusterRoles().Delete(ctx, x.Name, metav1.DeleteOptions{})
		case *rbacv1.ClusterRoleBinding:
			x.Name, x.RoleRef.Name = ns+"-"+x.Name, ns+"-"+x.RoleRef.Name
			for i := range x.Subjects {
				x.Subjects[i].Namespace = ns
			}
			_, err = cp.client.RbacV1().ClusterRoleBindings().Create(ctx, x, metav1.CreateOptions{FieldValidation: "Strict"})
			defer cp.client.RbacV1().ClusterRoleBindings().Delete(ctx, x.Name, metav1.DeleteOptions{})
		default:
			continue // monitoring.coreos.com: no prometheus-operator CRDs on this API server
		}
		if err != nil {
			t.Errorf("create %s %s (from %s) on the API server: %v", o.kind, o.name, o.source, err)
		}
	}
}

// TestChartRendersWithTLS renders the chart with server TLS, where the
// extender's configuration uses HTTPS with a client certificate and the token
// file names kube-scheduler's certificate.
func TestChartRendersWithTLS(t *testing.T) {
	objs := renderChart(t, map[string]any{"server": map[string]any{"tls": map[string]any{"secretName": "gpuwatch-tls"}, "replicas": 2, "storeURL": "http://vm:8428"}})
	tokens := find[*corev1.Secret](t, objs, "v1/Secret", "gpuwatch-tokens")
	if !strings.Contains(tokens.StringData["tokens.yaml"], "client_cert_cn: kube-scheduler") {
		t.Errorf("token file without kube-scheduler's certificate:\n%s", tokens.StringData["tokens.yaml"])
	}
	sc := find[*corev1.ConfigMap](t, objs, "v1/ConfigMap", "gpuwatch-scheduler-extender")
	var kcfg kubeschedulerconfigv1.KubeSchedulerConfiguration
	if err := yaml.UnmarshalStrict([]byte(sc.Data["scheduler-config.yaml"]), &kcfg); err != nil {
		t.Fatal(err)
	}
	if e := kcfg.Extenders[0]; !e.EnableHTTPS || e.TLSConfig == nil || e.TLSConfig.CertFile == "" || !strings.HasPrefix(e.URLPrefix, "https://") {
		t.Errorf("extender with TLS: %+v", e)
	}
}

// serverRBAC is the chart's RBAC for the server, installed once on the
// control plane: the ServiceAccount gpuwatch-server in namespace gpuwatch
// bound by exactly the chart's ClusterRoles and Roles.
var serverRBAC struct {
	once  sync.Once
	err   error
	rules []rbacv1.PolicyRule // every rule granted
}

// haValues are the chart's values for two server replicas electing a
// leader: its RBAC is the default's and the leader election's (a Role on
// Leases, listing nodes to take over), which the tests exercise all of.
var haValues = map[string]any{"server": map[string]any{"replicas": 2, "storeURL": "http://victoria-metrics:8428"}}

// installServerRBAC installs the chart's server RBAC (haValues) on the
// control plane.
func installServerRBAC(t *testing.T) {
	t.Helper()
	serverRBAC.once.Do(func() {
		objs := renderChart(t, haValues)
		ctx := context.Background()
		c := cp.client
		if _, err := c.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: releaseNamespace}}, metav1.CreateOptions{}); err != nil {
			serverRBAC.err = err
			return
		}
		for _, o := range objs {
			var err error
			switch x := o.obj.(type) {
			case *corev1.ServiceAccount:
				if x.Name == "gpuwatch-server" {
					_, err = c.CoreV1().ServiceAccounts(releaseNamespace).Create(ctx, x, metav1.CreateOptions{})
				}
			case *rbacv1.ClusterRole:
				serverRBAC.rules = append(serverRBAC.rules, x.Rules...)
				_, err = c.RbacV1().ClusterRoles().Create(ctx, x, metav1.CreateOptions{})
			case *rbacv1.ClusterRoleBinding:
				_, err = c.RbacV1().ClusterRoleBindings().Create(ctx, x, metav1.CreateOptions{})
			case *rbacv1.Role:
				serverRBAC.rules = append(serverRBAC.rules, x.Rules...)
				_, err = c.RbacV1().Roles(releaseNamespace).Create(ctx, x, metav1.CreateOptions{})
			case *rbacv1.RoleBinding:
				_, err = c.RbacV1().RoleBindings(releaseNamespace).Create(ctx, x, metav1.CreateOptions{})
			}
			if err != nil {
				serverRBAC.err = fmt.Errorf("install %s %s: %w", o.kind, o.name, err)
				return
			}
		}
	})
	if serverRBAC.err != nil {
		t.Fatal(serverRBAC.err)
	}
}

// serverConfig is a client configuration for gpuwatch's server with a token
// of the chart's ServiceAccount gpuwatch-server (TokenRequest API), whose
// every API call is recorded for TestMain's comparison with the chart's RBAC.
func serverConfig(t *testing.T) *rest.Config {
	t.Helper()
	installServerRBAC(t)
	tr, err := cp.client.CoreV1().ServiceAccounts(releaseNamespace).CreateToken(context.Background(), "gpuwatch-server",
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: new(int64(3600))}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cfg := &rest.Config{Host: cp.admin.Host, BearerToken: tr.Status.Token, TLSClientConfig: rest.TLSClientConfig{CAData: cp.admin.CAData, ServerName: cp.admin.ServerName}}
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper { return recorder{rt} }
	return cfg
}

func serverClient(t *testing.T) kubernetes.Interface {
	t.Helper()
	c, err := kubernetes.NewForConfig(serverConfig(t))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// apiCall is a (verb, group, resource[/subresource]) gpuwatch's server used.
type apiCall struct{ verb, group, resource string }

var recorded = struct {
	sync.Mutex
	calls map[apiCall]int
	// denied are calls the API server refused (403): a permission the chart
	// lacks.
	denied map[apiCall]int
}{calls: map[apiCall]int{}, denied: map[apiCall]int{}}

var requestInfo = &request.RequestInfoFactory{APIPrefixes: sets.NewString("api", "apis"), GrouplessAPIPrefixes: sets.NewString("api")}

// recorder records each API call's verb and resource as the API server's
// authorizer sees them.
type recorder struct{ next http.RoundTripper }

func (r recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	info, err := requestInfo.NewRequestInfo(req)
	resp, rerr := r.next.RoundTrip(req)
	if err == nil && info.IsResourceRequest {
		res := info.Resource
		if info.Subresource != "" {
			res += "/" + info.Subresource
		}
		c := apiCall{info.Verb, info.APIGroup, res}
		recorded.Lock()
		recorded.calls[c]++
		if rerr == nil && resp.StatusCode == http.StatusForbidden {
			recorded.denied[c]++
		}
		recorded.Unlock()
	}
	return resp, rerr
}

// compareRBAC compares the chart's server rules with the calls the tests
// recorded: every granted (verb, resource) must have been used, every used
// one granted. It returns the differences, sorted.
func compareRBAC() []string {
	recorded.Lock()
	defer recorded.Unlock()
	granted := map[apiCall]bool{}
	for _, r := range serverRBAC.rules {
		for _, g := range r.APIGroups {
			for _, res := range r.Resources {
				for _, v := range r.Verbs {
					granted[apiCall{v, g, res}] = true
				}
			}
		}
	}
	var diff []string
	for c := range granted {
		if recorded.calls[c] == 0 {
			diff = append(diff, fmt.Sprintf("the chart grants %s %s (group %q) but no test saw gpuwatch use it", c.verb, c.resource, c.group))
		}
	}
	for c, n := range recorded.calls {
		if !granted[c] {
			diff = append(diff, fmt.Sprintf("gpuwatch called %s %s (group %q) %d times, which the chart does not grant", c.verb, c.resource, c.group, n))
		}
	}
	sort.Strings(diff)
	return diff
}

// TestChartHighAvailability: two replicas without a shared store fail to
// render, saying why; with one, the servers elect a leader through a Lease
// named after the release (identity: the pod's name, from the downward API),
// use the store instead of an embedded one, the agents push health reports to
// every replica's stable address, the acting leader points the selector-less
// Service gpuwatch-server-leader at its pod's IP (POD_IP, from the downward
// API), and the server gets a Role on Leases and on that Service's
// EndpointSlice. One replica elects nothing and has no Role, no leader
// Service, no POD_IP.
func TestChartHighAvailability(t *testing.T) {
	if err := renderErr(map[string]any{"server": map[string]any{"replicas": 2}}); err == nil || !strings.Contains(err.Error(), "server.storeURL") {
		t.Errorf("replicas 2 without a store: %v, want a failure naming server.storeURL", err)
	}
	objs := renderChart(t, haValues)
	scrapedOnce(t, objs, find[*monitoringv1.ServiceMonitor](t, objs, "monitoring.coreos.com/v1/ServiceMonitor", "gpuwatch"))
	sts := find[*appsv1.StatefulSet](t, objs, "apps/v1/StatefulSet", "gpuwatch-server")
	args := strings.Join(sts.Spec.Template.Spec.Containers[0].Args, " ")
	for _, want := range []string{"--leader-elect ", "--leader-elect.lease=gpuwatch/gpuwatch-server ", "--leader-elect.identity=$(POD_NAME)",
		"--store.url=http://victoria-metrics:8428", "--state-dir=/data", "--leader-elect.lease-duration=8s",
		"--leader-elect.service=gpuwatch/gpuwatch-server-leader", "--leader-elect.address=$(POD_IP) "} {
		if !strings.Contains(args+" ", want) {
			t.Errorf("server args %q lack %q", args, want)
		}
	}
	if strings.Contains(args, "--data-dir") || strings.Contains(args, "--retention") {
		t.Errorf("server args %q keep the embedded store's flags", args)
	}
	env := sts.Spec.Template.Spec.Containers[0].Env
	if len(env) != 2 || env[0].Name != "POD_NAME" || env[0].ValueFrom == nil || env[0].ValueFrom.FieldRef.FieldPath != "metadata.name" ||
		env[1].Name != "POD_IP" || env[1].ValueFrom == nil || env[1].ValueFrom.FieldRef.FieldPath != "status.podIP" {
		t.Errorf("server env %+v, want POD_NAME from metadata.name, then POD_IP from status.podIP", env)
	}
	svc := find[*corev1.Service](t, objs, "v1/Service", "gpuwatch-server-leader")
	if len(svc.Spec.Selector) != 0 || len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].Name != kube.LeaderServicePort || svc.Spec.Ports[0].Port != 9402 ||
		svc.Namespace != releaseNamespace {
		t.Errorf("leader Service %+v, want no selector and one port %s 9402", svc.Spec, kube.LeaderServicePort)
	}
	if _, ok := svc.Labels["app.kubernetes.io/instance"]; ok {
		t.Errorf("leader Service labels %v: the ServiceMonitor would scrape the leader through it too", svc.Labels)
	}
	if *sts.Spec.Replicas != 2 {
		t.Errorf("replicas %d", *sts.Spec.Replicas)
	}
	ds := find[*appsv1.DaemonSet](t, objs, "apps/v1/DaemonSet", "gpuwatch-agent")
	want := "--server=http://gpuwatch-server-0.gpuwatch-server-headless.gpuwatch.svc:9402,http://gpuwatch-server-1.gpuwatch-server-headless.gpuwatch.svc:9402"
	if agentArgs := ds.Spec.Template.Spec.Containers[0].Args; !slices.Contains(agentArgs, want) {
		t.Errorf("agent args %q lack %q", agentArgs, want)
	}
	role := find[*rbacv1.Role](t, objs, "rbac.authorization.k8s.io/v1/Role", "gpuwatch-server-leader")
	wantRules := []rbacv1.PolicyRule{
		{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: []string{"get", "create", "update"}},
		{APIGroups: []string{"discovery.k8s.io"}, Resources: []string{"endpointslices"}, ResourceNames: []string{"gpuwatch-server-leader"}, Verbs: []string{"get", "update"}},
		{APIGroups: []string{"discovery.k8s.io"}, Resources: []string{"endpointslices"}, Verbs: []string{"create"}},
	}
	if !reflect.DeepEqual(role.Rules, wantRules) || role.Namespace != releaseNamespace {
		t.Errorf("leader Role %+v, want rules %+v", role, wantRules)
	}
	find[*rbacv1.RoleBinding](t, objs, "rbac.authorization.k8s.io/v1/RoleBinding", "gpuwatch-server-leader")

	for _, o := range renderChart(t, nil) {
		if o.kind == "rbac.authorization.k8s.io/v1/Role" {
			t.Errorf("one replica renders Role %s", o.name)
		}
		if o.kind == "v1/Service" && o.name == "gpuwatch-server-leader" {
			t.Error("one replica renders the leader Service")
		}
		if sts, ok := o.obj.(*appsv1.StatefulSet); ok {
			if strings.Contains(strings.Join(sts.Spec.Template.Spec.Containers[0].Args, " "), "--leader-elect") {
				t.Error("one replica elects a leader")
			}
			if env := sts.Spec.Template.Spec.Containers[0].Env; len(env) != 0 {
				t.Errorf("one replica's server env %+v", env)
			}
		}
	}
}

// TestChartLiveTopology: server.topology.fromNodeLabels makes the server read
// the nodes' live topology labels, and only then does one replica's
// ClusterRole grant list nodes.
func TestChartLiveTopology(t *testing.T) {
	listsNodes := func(objs []renderedObject) bool {
		cr := find[*rbacv1.ClusterRole](t, objs, "rbac.authorization.k8s.io/v1/ClusterRole", "gpuwatch-server")
		return slices.ContainsFunc(cr.Rules, func(r rbacv1.PolicyRule) bool {
			return slices.Contains(r.Resources, "nodes") && slices.Contains(r.Verbs, "list")
		})
	}
	if listsNodes(renderChart(t, nil)) {
		t.Error("the default values grant list nodes")
	}
	objs := renderChart(t, map[string]any{"server": map[string]any{"topology": map[string]any{"fromNodeLabels": true, "nodeSelector": "nvidia.com/gpu.present=true"}}})
	sts := find[*appsv1.StatefulSet](t, objs, "apps/v1/StatefulSet", "gpuwatch-server")
	args := sts.Spec.Template.Spec.Containers[0].Args
	for _, want := range []string{"--placement.k8s-live", "--placement.k8s-interval=1m", "--placement.k8s-selector=nvidia.com/gpu.present=true"} {
		if !slices.Contains(args, want) {
			t.Errorf("server args %q lack %q", args, want)
		}
	}
	if !listsNodes(objs) {
		t.Error("fromNodeLabels without list nodes in the ClusterRole")
	}
}

// renderErr is renderChart's rendering alone, for values that must fail.
func renderErr(values map[string]any) error {
	ch, err := loader.Load(chartDir)
	if err != nil {
		return err
	}
	vals, err := chartutil.ToRenderValues(ch, values, chartutil.ReleaseOptions{Name: releaseName, Namespace: releaseNamespace, IsInstall: true, Revision: 1}, chartutil.DefaultCapabilities)
	if err != nil {
		return err
	}
	_, err = engine.Render(ch, vals)
	return err
}

// scrapedOnce checks that every endpoint port of the ServiceMonitor is found
// on exactly one Service it selects, as prometheus-operator discovers targets:
// a port of the same pods on two selected Services (the server's ClusterIP
// and headless Services) would scrape each pod twice, and every sum of the
// server's series on a dashboard would count it twice.
func scrapedOnce(t *testing.T, objs []renderedObject, sm *monitoringv1.ServiceMonitor) {
	t.Helper()
	sel, err := metav1.LabelSelectorAsSelector(&sm.Spec.Selector)
	if err != nil {
		t.Fatal(err)
	}
	for _, ep := range sm.Spec.Endpoints {
		var on []string
		for _, o := range objs {
			svc, ok := o.obj.(*corev1.Service)
			if !ok || !sel.Matches(labels.Set(svc.Labels)) {
				continue
			}
			for _, p := range svc.Spec.Ports {
				if p.Name == ep.Port {
					on = append(on, o.name)
				}
			}
		}
		if len(on) != 1 {
			t.Errorf("the ServiceMonitor's port %q is on %d selected Services %v, want 1: each target scraped once", ep.Port, len(on), on)
		}
	}
}
