// Package defs defines gpuwatch's Grafana dashboards in Go with the Grafana
// Foundation SDK (github.com/grafana/grafana-foundation-sdk/go). `go generate
// ./dashboards/` runs dashboards/internal/gen, which writes All's JSON into
// dashboards/*.json; a test in package dashboards regenerates them and fails
// on any difference. Only the generator and the tests link this package (and
// with it the SDK): the gpuwatch binary does not.
//
// The helpers in this file wrap the SDK's builders with the conventions every
// gpuwatch panel follows: the ${datasource} variable on every query, a unit and
// a description on every panel, stable panel ids, and drill-down links that
// carry the data source, the time range and the clicked series' labels.
package defs

//lint:file-ignore SA1019 The SDK marks its v1 dashboard model deprecated in favour of dashboardv2, which only recent Grafana (12, behind its dynamic-dashboards feature) reads; v1 JSON is what Grafana provisions from files, old and new.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"sort"
	"strings"

	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/cog/variants"
	"github.com/grafana/grafana-foundation-sdk/go/common"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/grafana/grafana-foundation-sdk/go/heatmap"
	"github.com/grafana/grafana-foundation-sdk/go/prometheus"
	"github.com/grafana/grafana-foundation-sdk/go/stat"
	"github.com/grafana/grafana-foundation-sdk/go/statetimeline"
	"github.com/grafana/grafana-foundation-sdk/go/table"
	"github.com/grafana/grafana-foundation-sdk/go/timeseries"
)

// The dashboards' uids: stable, so that links and bookmarks survive
// regeneration and provisioning.
const (
	UIDFleet     = "gpuwatch-fleet"
	UIDNode      = "gpuwatch-node"
	UIDGPU       = "gpuwatch-gpu"
	UIDFabric    = "gpuwatch-fabric"
	UIDHealth    = "gpuwatch-health"
	UIDScheduler = "gpuwatch-scheduler"
	UIDTeams     = "gpuwatch-teams"
)

// Tag is on every gpuwatch dashboard; the dashboards' link menu lists them by it.
const Tag = "gpuwatch"

// File is one generated dashboard: its file name under dashboards/, its uid
// and its JSON.
type File struct {
	Name string
	UID  string
	JSON []byte
}

// All builds every dashboard, in file-name order.
func All() ([]File, error) {
	defs := []struct {
		name  string
		build func() *dashboard.DashboardBuilder
	}{
		{"fleet.json", fleet},
		{"node.json", node},
		{"gpu.json", gpu},
		{"fabric.json", fabric},
		{"health.json", health},
		{"scheduler.json", scheduler},
		{"teams.json", teams},
	}
	var out []File
	for _, d := range defs {
		dash, err := d.build().Build()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", d.name, err)
		}
		// Queries read better with their < and > as they are.
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		enc.SetIndent("", "  ")
		if err := enc.Encode(dash); err != nil {
			return nil, fmt.Errorf("%s: %w", d.name, err)
		}
		// The SDK's own marshalers (queries) escape them anyway: unescape
		// (they only occur inside JSON strings, where both spellings are equal).
		b := strings.NewReplacer(`\u003c`, "<", `\u003e`, ">", `\u0026`, "&").Replace(buf.String())
		out = append(out, File{Name: d.name, UID: *dash.Uid, JSON: []byte(b)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

func ptr[T any](v T) *T { return &v }

// ds is the data source of every query and variable: the dashboard's
// ${datasource} variable, a Prometheus data source.
var ds = common.DataSourceRef{Type: ptr("prometheus"), Uid: ptr("${datasource}")}

// PluginType is the gpuwatch data source's plugin id (datasource/, a Grafana
// backend plugin): the analyzer's tables that PromQL cannot compute, read from
// the server's API.
const PluginType = "gpuwatch-datasource"

// PluginVariable is the variable that names the gpuwatch data source on the
// dashboards with analyzer tables.
const PluginVariable = "gpuwatch_ds"

// pluginDS is the data source of the analyzer tables' queries.
var pluginDS = common.DataSourceRef{Type: ptr(PluginType), Uid: ptr("${" + PluginVariable + "}")}

// withPluginVariable adds the gpuwatch data source variable to a dashboard.
func withPluginVariable(d *dashboard.DashboardBuilder) *dashboard.DashboardBuilder {
	return d.WithVariable(dashboard.NewDatasourceVariableBuilder(PluginVariable).
		Label("gpuwatch data source").
		Description("The gpuwatch server as the gpuwatch data source (the gpuwatch-datasource plugin, docs/grafana-datasource.md), for the tables of its analyzer.").
		Type(PluginType))
}

// analyzerTable is a table of one gpuwatch data source query: query holds
// the query's fields (queryType, by, …; docs/grafana-datasource.md). The
// frames carry their own units per column; the panel's unit is for the
// columns without one (counts).
func analyzerTable(p panel, query map[string]any) *table.PanelBuilder {
	if p.w == 0 {
		p.w = 24
	}
	q := variants.UnknownDataquery{"refId": "A", "datasource": pluginDS}
	maps.Copy(q, query)
	// apply's panel, less its Prometheus data source.
	return apply(table.NewPanelBuilder(), p).
		Datasource(pluginDS).
		WithTarget(variants.NewUnknownDataqueryBuilderFromObject(q)).
		CellHeight(common.TableCellHeightSm).
		Filterable(true)
}

// newDashboard starts a dashboard with gpuwatch's defaults: the tag, the last
// hour, a refresh every minute, a shared crosshair, the data source variable,
// and a menu of the other gpuwatch dashboards that keeps the time range and the
// variables.
func newDashboard(uid, title, description string) *dashboard.DashboardBuilder {
	return dashboard.NewDashboardBuilder(title).
		Uid(uid).
		Description(description).
		Tags([]string{Tag}).
		Editable().
		Time("now-1h", "now").
		Refresh("1m").
		Timezone(common.TimeZoneBrowser).
		Tooltip(dashboard.DashboardCursorSyncCrosshair).
		WithVariable(dashboard.NewDatasourceVariableBuilder("datasource").
			Label("Data source").
			Description("The gpuwatch server (or a Prometheus-compatible store with gpuwatch's series), as a Prometheus data source.").
			Type("prometheus")).
		Link(dashboard.NewDashboardLinkBuilder("gpuwatch").
			Type(dashboard.DashboardLinkTypeDashboards).
			Tags([]string{Tag}).
			AsDropdown(true).
			IncludeVars(true).
			KeepTime(true).
			Tooltip("gpuwatch's other dashboards"))
}

// queryVar is a query variable resolved through the label-values API.
type queryVar struct {
	name, label, description string
	query                    string // label_values(...)
	multi                    bool   // multi-select with an All option
	sort                     dashboard.VariableSort
}

func (v queryVar) builder() *dashboard.QueryVariableBuilder {
	sortBy := v.sort
	if sortBy == 0 {
		sortBy = dashboard.VariableSortNaturalAsc
	}
	b := dashboard.NewQueryVariableBuilder(v.name).
		Label(v.label).
		Description(v.description).
		Datasource(ds).
		Query(dashboard.StringOrMap{String: ptr(v.query)}).
		Definition(v.query).
		Refresh(dashboard.VariableRefreshOnTimeRangeChanged).
		Sort(sortBy).
		Multi(v.multi).
		IncludeAll(v.multi)
	if v.multi {
		b.Current(dashboard.VariableOption{Selected: ptr(true),
			Text:  dashboard.StringOrArrayOfString{String: ptr("All")},
			Value: dashboard.StringOrArrayOfString{String: ptr("$__all")}})
	}
	return b
}

// The variables the dashboards share.
var (
	varNode = queryVar{name: "node", label: "Node", query: "label_values(gpuwatch_node_health_state, node)",
		description: "A node that reported to the store in the time range (gpuwatch_node_health_state's node label)."}
	varNodes = queryVar{name: "node", label: "Node", query: "label_values(gpuwatch_node_health_state, node)", multi: true,
		description: "Nodes that reported to the store in the time range (gpuwatch_node_health_state's node label)."}
	varGPU = queryVar{name: "gpu", label: "GPU", query: `label_values(gpuwatch_gpu_info{node=~"$node"}, gpu_index)`,
		sort: dashboard.VariableSortNumericalAsc, description: "A GPU of the node, by index (gpu on DCGM_FI_* series, gpu_index on gpuwatch_* series)."}
	varGPUs = queryVar{name: "gpu", label: "GPU", query: `label_values(gpuwatch_gpu_info{node=~"$node"}, gpu_index)`, multi: true,
		sort: dashboard.VariableSortNumericalAsc, description: "GPUs of the node, by index (gpu on DCGM_FI_* series, gpu_index on gpuwatch_* series)."}
	varLeaf = queryVar{name: "leaf", label: "Leaf", query: "label_values(gpuwatch_topology_node_info, leaf)", multi: true,
		description: "Leaf switches (groups of nodes under one leaf, gpuwatch_topology_node_info's leaf label)."}
	varLeafNodes = queryVar{name: "node", label: "Node", query: `label_values(gpuwatch_topology_node_info{leaf=~"$leaf"}, node)`, multi: true,
		description: "Nodes under the chosen leaves."}
	varAccount = queryVar{name: "account", label: "Account", query: "label_values(gpuwatch_gpu_allocation_info, account)", multi: true,
		description: "Accounts whose jobs held GPUs in the time range (gpuwatch_gpu_allocation_info's account label)."}
	varUser = queryVar{name: "user", label: "User", query: `label_values(gpuwatch_gpu_allocation_info{account=~"$account"}, user)`, multi: true,
		description: "Users of the chosen accounts whose jobs held GPUs in the time range."}
)

// target is one query of a panel.
type target struct {
	expr, legend string
	instant      bool
	format       prometheus.PromQueryFormat
}

// q is a range query with a legend.
func q(expr, legend string) target { return target{expr: expr, legend: legend} }

// instant is an instant query shown as a table.
func instant(expr string) target {
	return target{expr: expr, instant: true, format: prometheus.PromQueryFormatTable}
}

func (t target) builder(refID string) *prometheus.DataqueryBuilder {
	b := prometheus.NewDataqueryBuilder().
		Datasource(ds).
		RefId(refID).
		Expr(strings.TrimSpace(t.expr)).
		EditorMode(prometheus.QueryEditorModeCode)
	if t.legend != "" {
		b.LegendFormat(t.legend)
	}
	if t.format != "" {
		b.Format(t.format)
	}
	if t.instant {
		b.Instant()
	} else {
		b.Range()
	}
	return b
}

// panel is what every panel has.
type panel struct {
	title, desc, unit string
	w, h              uint32
	targets           []target
	links             []cog.Builder[dashboard.DashboardLink]
	mappings          []dashboard.ValueMapping
	min, max          *float64
}

// panelBuilder is the part of the SDK's panel builders the helpers use.
type panelBuilder[B any] interface {
	cog.Builder[dashboard.Panel]
	Id(uint32) B
	Title(string) B
	Description(string) B
	Unit(string) B
	Datasource(common.DataSourceRef) B
	WithTarget(cog.Builder[variants.Dataquery]) B
	Height(uint32) B
	Span(uint32) B
	DataLinks([]cog.Builder[dashboard.DashboardLink]) B
	Mappings([]dashboard.ValueMapping) B
	Min(float64) B
	Max(float64) B
}

// apply sets what every panel has on b.
func apply[B panelBuilder[B]](b B, p panel) B {
	if p.w == 0 {
		p.w = 12
	}
	if p.h == 0 {
		p.h = 8
	}
	b.Title(p.title).Description(p.desc).Unit(p.unit).Datasource(ds).Height(p.h).Span(p.w)
	for i, t := range p.targets {
		b.WithTarget(t.builder(string(rune('A' + i))))
	}
	if len(p.links) > 0 {
		b.DataLinks(p.links)
	}
	if len(p.mappings) > 0 {
		b.Mappings(p.mappings)
	}
	if p.min != nil {
		b.Min(*p.min)
	}
	if p.max != nil {
		b.Max(*p.max)
	}
	return b
}

// board numbers panels as they are added.
type board struct {
	*dashboard.DashboardBuilder
	id uint32
}

func newBoard(d *dashboard.DashboardBuilder) *board { return &board{DashboardBuilder: d} }

func (b *board) row(title string) *board {
	b.id++
	b.WithRow(dashboard.NewRowBuilder(title).Id(b.id))
	return b
}

func (b *board) add(p interface {
	cog.Builder[dashboard.Panel]
}) *board {
	b.id++
	switch x := p.(type) {
	case *timeseries.PanelBuilder:
		x.Id(b.id)
	case *stat.PanelBuilder:
		x.Id(b.id)
	case *table.PanelBuilder:
		x.Id(b.id)
	case *statetimeline.PanelBuilder:
		x.Id(b.id)
	case *heatmap.PanelBuilder:
		x.Id(b.id)
	default:
		panic(fmt.Sprintf("defs: panel type %T", p))
	}
	b.WithPanel(p)
	return b
}

// timeSeries is a time-series panel: lines, legend as a table with the last
// and maximum values.
func timeSeries(p panel) *timeseries.PanelBuilder {
	b := apply(timeseries.NewPanelBuilder(), p).
		FillOpacity(10).
		ShowPoints(common.VisibilityModeNever).
		Legend(common.NewVizLegendOptionsBuilder().
			DisplayMode(common.LegendDisplayModeTable).
			Placement(common.LegendPlacementBottom).
			ShowLegend(true).
			Calcs([]string{"lastNotNull", "max"})).
		Tooltip(common.NewVizTooltipOptionsBuilder().Mode(common.TooltipDisplayModeMulti).Sort(common.SortOrderDescending))
	return b
}

// stacked is a time series whose series add up (GPUs by state, nodes by state).
func stacked(p panel) *timeseries.PanelBuilder {
	return timeSeries(p).FillOpacity(60).Stacking(common.NewStackingConfigBuilder().Mode(common.StackingModeNormal))
}

// single is a stat panel of the last value.
func single(p panel) *stat.PanelBuilder {
	if p.w == 0 {
		p.w = 6
	}
	if p.h == 0 {
		p.h = 4
	}
	return apply(stat.NewPanelBuilder(), p).
		GraphMode(common.BigValueGraphModeArea).
		ColorMode(common.BigValueColorModeValue).
		ReduceOptions(common.NewReduceDataOptionsBuilder().Calcs([]string{"lastNotNull"}))
}

// timeline is a state timeline: one row per series, its value mapped to a
// state name and colour.
func timeline(p panel) *statetimeline.PanelBuilder {
	return apply(statetimeline.NewPanelBuilder(), p).
		ShowValue(common.VisibilityModeNever).
		MergeValues(true).
		FillOpacity(80).
		Legend(common.NewVizLegendOptionsBuilder().
			DisplayMode(common.LegendDisplayModeList).
			Placement(common.LegendPlacementBottom).
			ShowLegend(true))
}

// labelTable is a table of an instant query's series: one row per series, its
// labels as columns, Time hidden, the value renamed.
func labelTable(p panel, valueName string, hide ...string) *table.PanelBuilder {
	exclude := map[string]bool{"Time": true, "__name__": true}
	for _, h := range hide {
		exclude[h] = true
	}
	rename := map[string]string{}
	if valueName != "" {
		rename["Value"] = valueName
	} else {
		exclude["Value"] = true
	}
	return apply(table.NewPanelBuilder(), p).
		WithTransformation(dashboard.DataTransformerConfig{Id: "organize", Options: map[string]any{
			"excludeByName": exclude, "renameByName": rename}}).
		CellHeight(common.TableCellHeightSm).
		Filterable(true)
}

// histogramHeatmap is a heatmap of a Prometheus histogram's buckets.
func histogramHeatmap(p panel) *heatmap.PanelBuilder {
	return apply(heatmap.NewPanelBuilder(), p).
		Calculate(false).
		YAxis(heatmap.NewYAxisConfigBuilder().Unit(p.unit)).
		Color(heatmap.NewHeatmapColorOptionsBuilder().
			Mode(heatmap.HeatmapColorModeScheme).
			Scheme("Oranges").
			Scale(heatmap.HeatmapColorScaleExponential).
			Exponent(0.5).
			Steps(64)).
		CellGap(1).
		ShowValue(common.VisibilityModeNever)
}

// stateMappings names values: value → text and colour.
func stateMappings(states ...struct{ value, text, color string }) []dashboard.ValueMapping {
	opts := map[string]dashboard.ValueMappingResult{}
	for i, s := range states {
		opts[s.value] = dashboard.ValueMappingResult{Text: ptr(s.text), Color: ptr(s.color), Index: ptr(int32(i))}
	}
	return []dashboard.ValueMapping{{ValueMap: &dashboard.ValueMap{Type: dashboard.MappingTypeValueToText, Options: opts}}}
}

type st = struct{ value, text, color string }

// healthStates are telemetry's health states (docs/metrics.md: 0 healthy, 1
// suspect, 2 draining, 3 drained, 4 probation).
var healthStates = stateMappings(
	st{"0", "healthy", "green"},
	st{"1", "suspect", "yellow"},
	st{"2", "draining", "orange"},
	st{"3", "drained", "red"},
	st{"4", "probation", "blue"},
)

// onOff maps 0/1 series.
func onOff(off, on string) []dashboard.ValueMapping {
	return stateMappings(st{"0", off, "green"}, st{"1", on, "red"})
}

// linkTo is a data link to another gpuwatch dashboard that keeps the data
// source and the time range and sets the given variables, each
// "name=value" with the value usually ${__field.labels.<label>} (a series'
// label) or ${__data.fields.<column>} (a table row's column).
func linkTo(title, uid string, vars ...string) cog.Builder[dashboard.DashboardLink] {
	params := []string{"var-datasource=${datasource}"}
	for _, v := range vars {
		params = append(params, "var-"+v)
	}
	params = append(params, "${__url_time_range}")
	return dashboard.NewDashboardLinkBuilder(title).
		Type(dashboard.DashboardLinkTypeLink).
		Url("/d/" + uid + "?" + strings.Join(params, "&"))
}

// Drill-down links.
var (
	toNode = func(label string) cog.Builder[dashboard.DashboardLink] {
		return linkTo("Node ${__field.labels."+label+"}", UIDNode, "node=${__field.labels."+label+"}")
	}
	toNodeRow = func(column string) cog.Builder[dashboard.DashboardLink] {
		return linkTo("Node ${__data.fields."+column+"}", UIDNode, "node=${__data.fields."+column+"}")
	}
	toGPU = func(nodeLabel, gpuLabel string) cog.Builder[dashboard.DashboardLink] {
		return linkTo("GPU ${__field.labels."+gpuLabel+"} of ${__field.labels."+nodeLabel+"}", UIDGPU,
			"node=${__field.labels."+nodeLabel+"}", "gpu=${__field.labels."+gpuLabel+"}")
	}
	toGPURow = func(nodeColumn, gpuColumn string) cog.Builder[dashboard.DashboardLink] {
		return linkTo("GPU ${__data.fields."+gpuColumn+"} of ${__data.fields."+nodeColumn+"}", UIDGPU,
			"node=${__data.fields."+nodeColumn+"}", "gpu=${__data.fields."+gpuColumn+"}")
	}
)

func links(l ...cog.Builder[dashboard.DashboardLink]) []cog.Builder[dashboard.DashboardLink] {
	return l
}

// Units: Grafana's unit ids, and custom suffixes for counts of things.
const (
	unitGPUs     = "suffix: GPUs"
	unitNodes    = "suffix: nodes"
	unitGPUHours = "suffix: GPU-h"
	unitCount    = "short"
	unitPercent  = "percent"     // 0-100
	unitRatio    = "percentunit" // 0-1
	unitWatts    = "watt"
	unitCelsius  = "celsius"
	unitHertz    = "hertz"
	unitMiB      = "mbytes"
	unitBytesSec = "Bps"
	unitPerSec   = "cps" // counts per second
	unitPerMin   = "cpm" // counts per minute
	unitOpsSec   = "ops"
	unitSeconds  = "s"
	unitState    = "none"   // a state shown through value mappings
	unitLabels   = "string" // a table of labels, its value hidden
)
