package ui

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/gpuwatch/gpuwatch/telemetry"
	"github.com/gpuwatch/gpuwatch/telemetry/store"
)

// gpuView is the GPU page's data.
type gpuView struct {
	Node    string
	GPU     int
	UUID    string
	Model   string
	Hours   int
	Charts  []*chart
	Errors  []string
	Grafana string
	Windows []int
}

// gpuCharts are the series that matter for a fault, one chart each; a line
// per expression. {sel} is the GPU's selector (dcgm-exporter's gpu label).
var gpuCharts = []struct {
	title, unit string
	exprs       []string
	names       []string
}{
	{"ECC errors (volatile)", "count", []string{telemetry.DCGMECCSBEVolTotal + "{sel}", telemetry.DCGMECCDBEVolTotal + "{sel}"}, []string{"single-bit", "double-bit"}},
	{"Remapped rows", "rows", []string{telemetry.DCGMCorrectableRemappedRows + "{sel}", telemetry.DCGMUncorrectableRemappedRows + "{sel}",
		telemetry.DCGMRowRemapPending + "{sel}", telemetry.DCGMRowRemapFailure + "{sel}"}, []string{"correctable", "uncorrectable", "pending", "failure"}},
	{"Throttling (violation time)", "s/s", []string{"rate(" + telemetry.DCGMThermalViolation + "{sel}[2m]) / 1e9", "rate(" + telemetry.DCGMPowerViolation + "{sel}[2m]) / 1e9",
		"rate(" + telemetry.DCGMReliabilityViolation + "{sel}[2m]) / 1e9"}, []string{"thermal", "power", "reliability"}},
	{"Clock event reasons (bitmask)", "bits", []string{telemetry.DCGMClockThrottleReasons + "{sel}"}, []string{"reasons"}},
	{"Clocks", "MHz", []string{telemetry.DCGMSMClock + "{sel}", telemetry.DCGMMemClock + "{sel}"}, []string{"SM", "memory"}},
	{"Temperatures", "°C", []string{telemetry.DCGMGPUTemp + "{sel}", telemetry.DCGMMemoryTemp + "{sel}", telemetry.DCGMSlowdownTemp + "{sel}"}, []string{"GPU", "memory", "slowdown"}},
	{"Power", "W", []string{telemetry.DCGMPowerUsage + "{sel}", telemetry.DCGMEnforcedPowerLimit + "{sel}"}, []string{"draw", "limit"}},
	{"Utilization", "%", []string{telemetry.DCGMGPUUtil + "{sel}", telemetry.DCGMMemCopyUtil + "{sel}"}, []string{"GPU", "memory copy"}},
	{"Profiling (DCGM)", "ratio", []string{telemetry.DCGMProfSMActive + "{sel}", telemetry.DCGMProfPipeTensorActive + "{sel}", telemetry.DCGMProfDRAMActive + "{sel}"},
		[]string{"SM active", "tensor active", "DRAM active"}},
}

func (u *UI) handleGPU(w http.ResponseWriter, r *http.Request) {
	node := r.PathValue("node")
	gpu, err := strconv.Atoi(r.PathValue("gpu"))
	if !nodeName.MatchString(node) || err != nil || gpu < 0 || gpu > 255 {
		u.fail(w, r, http.StatusBadRequest, "No such GPU", fmt.Sprintf("node %q GPU %q: want a node name and a GPU index", node, r.PathValue("gpu")))
		return
	}
	hours := 6
	if h := r.URL.Query().Get("hours"); h != "" {
		if hours, err = strconv.Atoi(h); err != nil || hours < 1 || hours > 48 {
			u.fail(w, r, http.StatusBadRequest, "Bad window", fmt.Sprintf("hours %q: want 1 to 48", h))
			return
		}
	}
	ctx, cancel := u.ctx(r)
	defer cancel()
	now := u.opts.Now()
	v := &gpuView{Node: node, GPU: gpu, Hours: hours, Windows: []int{1, 3, 6, 12, 24}}
	for _, s := range u.instant(ctx, "last_over_time("+telemetry.MetricGPUInfo+`{node=`+strconv.Quote(node)+`,gpu_index="`+strconv.Itoa(gpu)+`"}[15m])`, now, &v.Errors) {
		v.UUID, v.Model = s.Labels.Get(telemetry.LabelGPUUUID), s.Labels.Get(telemetry.LabelModel)
	}
	sel := `{node=` + strconv.Quote(node) + `,gpu="` + strconv.Itoa(gpu) + `"}`
	start := now.Add(-time.Duration(hours) * time.Hour)
	rg := store.Range{Start: start, End: now, Step: max(time.Duration(hours)*time.Hour/240, 15*time.Second)}
	for _, c := range gpuCharts {
		var m store.Matrix
		var names []string
		for i, e := range c.exprs {
			expr := strings.ReplaceAll(e, "{sel}", sel)
			got, err := u.opts.Querier.Range(ctx, expr, rg)
			if err != nil {
				v.Errors = append(v.Errors, expr+": "+err.Error())
				continue
			}
			for range got {
				names = append(names, c.names[i])
			}
			m = append(m, got...)
		}
		v.Charts = append(v.Charts, lineChart(c.title, c.unit, m, names, start, now))
	}
	if u.opts.GrafanaURL != "" {
		v.Grafana = u.opts.GrafanaURL + "/d/gpuwatch-gpu/?var-node=" + url.QueryEscape(node) + "&var-gpu=" + strconv.Itoa(gpu)
	}
	u.render(w, r, http.StatusOK, "gpu", u.page(r, fmt.Sprintf("%s GPU %d", node, gpu), "fleet", v))
}
