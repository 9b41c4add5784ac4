// Package grafana reads Grafana dashboard JSON and applies Grafana's own
// semantics to it where the dashboards' tests need them: the panels and their
// Prometheus queries (inside rows too), query variables and how Grafana
// resolves them through a Prometheus data source's label-values API, and how
// it interpolates variables into a query (a multi-value or "All" selection as
// a regex alternation of the values, each escaped as Grafana's Prometheus data
// source escapes it; $__interval, $__rate_interval, $__range).
//
// It reads any dashboard, not only gpuwatch's: dcgm-exporter's own dashboard
// (old "graph" panels, string data sources) goes through the same code.
package grafana

import (
	"encoding/json"
	"fmt"
	"strings"
)

// Dashboard is what the tests read of a dashboard.
type Dashboard struct {
	UID       string
	Title     string
	Tags      []string
	Panels    []Panel // every panel that is not a row, in order, rows' own included
	Variables []Variable
	Links     []Link
}

// Panel is a panel with its Prometheus queries.
type Panel struct {
	ID          int
	Type        string
	Title       string
	Description string
	// Unit is fieldConfig.defaults.unit; HeatmapUnit is a heatmap's y axis
	// unit (options.yAxis.unit).
	Unit, HeatmapUnit string
	// Mappings is how many value mappings the panel has.
	Mappings int
	Targets  []Target
	// DataLinks are the URLs of fieldConfig.defaults.links; Links those of the
	// panel's own links.
	DataLinks, Links []string
}

// Target is one query.
type Target struct {
	RefID   string
	Expr    string
	Legend  string
	Instant bool
	Format  string
	Hide    bool
	// Datasource is the query's own data source, else its panel's; a
	// dashboard that names it by a string (old JSON) has only its UID.
	Datasource DataSourceRef
	// Raw is the query as the dashboard holds it, for data sources other
	// than Prometheus.
	Raw json.RawMessage
}

// DataSourceRef names a data source by plugin type and uid.
type DataSourceRef struct {
	Type, UID string
}

// PromQL says whether the query is a Prometheus data source's: one of type
// prometheus, or of no type (the dashboard's default, old string references).
func (t Target) PromQL() bool { return t.Datasource.Type == "" || t.Datasource.Type == "prometheus" }

// parseRef reads a data source reference: an object with type and uid, or a
// string (old dashboards: a name or a variable).
func parseRef(raw json.RawMessage) DataSourceRef {
	var o struct {
		Type string `json:"type"`
		UID  string `json:"uid"`
	}
	if json.Unmarshal(raw, &o) == nil {
		return DataSourceRef{Type: o.Type, UID: o.UID}
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return DataSourceRef{UID: s}
	}
	return DataSourceRef{}
}

// Variable is a template variable.
type Variable struct {
	Name       string
	Type       string // query, datasource, custom, constant, interval…
	Query      string // a query variable's query (label_values(...)); a datasource variable's plugin type
	Multi      bool
	IncludeAll bool
	AllValue   string // "" when not set
	Regex      string
	Sort       int
}

// Link is a dashboard link.
type Link struct {
	Title string
	Type  string // dashboards or link
	URL   string
	Tags  []string
}

type rawPanel struct {
	ID          int               `json:"id"`
	Type        string            `json:"type"`
	Title       string            `json:"title"`
	Description string            `json:"description"`
	Datasource  json.RawMessage   `json:"datasource"`
	Targets     []json.RawMessage `json:"targets"`
	Panels      []rawPanel        `json:"panels"`
	Links       []struct {
		URL string `json:"url"`
	} `json:"links"`
	FieldConfig struct {
		Defaults struct {
			Unit     string            `json:"unit"`
			Mappings []json.RawMessage `json:"mappings"`
			Links    []struct {
				URL string `json:"url"`
			} `json:"links"`
		} `json:"defaults"`
	} `json:"fieldConfig"`
	Options struct {
		YAxis struct {
			Unit string `json:"unit"`
		} `json:"yAxis"`
	} `json:"options"`
}

type rawDashboard struct {
	UID        string     `json:"uid"`
	Title      string     `json:"title"`
	Tags       []string   `json:"tags"`
	Panels     []rawPanel `json:"panels"`
	Templating struct {
		List []struct {
			Name       string          `json:"name"`
			Type       string          `json:"type"`
			Query      json.RawMessage `json:"query"`
			Multi      bool            `json:"multi"`
			IncludeAll bool            `json:"includeAll"`
			AllValue   *string         `json:"allValue"`
			Regex      string          `json:"regex"`
			Sort       int             `json:"sort"`
		} `json:"list"`
	} `json:"templating"`
	Links []struct {
		Title string   `json:"title"`
		Type  string   `json:"type"`
		URL   string   `json:"url"`
		Tags  []string `json:"tags"`
	} `json:"links"`
}

// Parse reads a dashboard's JSON.
func Parse(data []byte) (*Dashboard, error) {
	var raw rawDashboard
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, err
	}
	d := &Dashboard{UID: raw.UID, Title: raw.Title, Tags: raw.Tags}
	var walk func(ps []rawPanel) error
	walk = func(ps []rawPanel) error {
		for _, p := range ps {
			if p.Type == "row" {
				if err := walk(p.Panels); err != nil {
					return err
				}
				continue
			}
			pp := Panel{ID: p.ID, Type: p.Type, Title: p.Title, Description: p.Description,
				Unit: p.FieldConfig.Defaults.Unit, HeatmapUnit: p.Options.YAxis.Unit, Mappings: len(p.FieldConfig.Defaults.Mappings)}
			for _, l := range p.FieldConfig.Defaults.Links {
				pp.DataLinks = append(pp.DataLinks, l.URL)
			}
			for _, l := range p.Links {
				pp.Links = append(pp.Links, l.URL)
			}
			for i, rt := range p.Targets {
				var t struct {
					RefID        string          `json:"refId"`
					Expr         string          `json:"expr"`
					LegendFormat string          `json:"legendFormat"`
					Instant      bool            `json:"instant"`
					Format       string          `json:"format"`
					Hide         bool            `json:"hide"`
					Datasource   json.RawMessage `json:"datasource"`
				}
				if err := json.Unmarshal(rt, &t); err != nil {
					return fmt.Errorf("panel %q target %d: %w", p.Title, i, err)
				}
				ref := parseRef(t.Datasource)
				if ref == (DataSourceRef{}) {
					ref = parseRef(p.Datasource)
				}
				pp.Targets = append(pp.Targets, Target{RefID: t.RefID, Expr: t.Expr, Legend: t.LegendFormat,
					Instant: t.Instant, Format: t.Format, Hide: t.Hide, Datasource: ref, Raw: rt})
			}
			d.Panels = append(d.Panels, pp)
		}
		return nil
	}
	if err := walk(raw.Panels); err != nil {
		return nil, err
	}
	for _, v := range raw.Templating.List {
		vv := Variable{Name: v.Name, Type: v.Type, Multi: v.Multi, IncludeAll: v.IncludeAll, Regex: v.Regex, Sort: v.Sort}
		if v.AllValue != nil {
			vv.AllValue = *v.AllValue
		}
		// The query is a string, or (newer Grafana) an object with a query field.
		var s string
		if err := json.Unmarshal(v.Query, &s); err == nil {
			vv.Query = s
		} else {
			var o struct {
				Query string `json:"query"`
			}
			if err := json.Unmarshal(v.Query, &o); err == nil {
				vv.Query = o.Query
			}
		}
		d.Variables = append(d.Variables, vv)
	}
	for _, l := range raw.Links {
		d.Links = append(d.Links, Link{Title: l.Title, Type: l.Type, URL: l.URL, Tags: l.Tags})
	}
	return d, nil
}

// Variable returns the variable called name, or nil.
func (d *Dashboard) Variable(name string) *Variable {
	for i := range d.Variables {
		if d.Variables[i].Name == name {
			return &d.Variables[i]
		}
	}
	return nil
}

// LabelValues is a label_values() variable query: the label whose values are
// asked for, and the series selector that restricts them ("" for none).
type LabelValues struct {
	Label, Match string
}

// ParseLabelValues reads label_values(label) or label_values(selector, label),
// the query variables Grafana answers through the label-values API.
func ParseLabelValues(query string) (LabelValues, error) {
	q := strings.TrimSpace(query)
	if !strings.HasPrefix(q, "label_values(") || !strings.HasSuffix(q, ")") {
		return LabelValues{}, fmt.Errorf("variable query %q: want label_values(...)", query)
	}
	inner := strings.TrimSpace(q[len("label_values(") : len(q)-1])
	i := strings.LastIndexByte(inner, ',')
	if i < 0 {
		return LabelValues{Label: inner}, nil
	}
	lv := LabelValues{Match: strings.TrimSpace(inner[:i]), Label: strings.TrimSpace(inner[i+1:])}
	if lv.Label == "" || lv.Match == "" {
		return LabelValues{}, fmt.Errorf("variable query %q: want label_values(selector, label)", query)
	}
	return lv, nil
}
