package server

import (
	"context"
	"errors"
	"fmt"
	"github.com/gpuwatch/gpuwatch/internal/httpjson"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/config"
	"github.com/prometheus/prometheus/discovery/targetgroup"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/notifier"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/prometheus/prometheus/rules"

	"github.com/gpuwatch/gpuwatch/alerts"
	"github.com/gpuwatch/gpuwatch/internal/ui"
)

// RulesOptions configure the server's rule evaluation: Prometheus's rules
// manager over the embedded store (recording rules are written back into
// it, alerting rules go to Alertmanager through Prometheus's notifier).
type RulesOptions struct {
	// Builtin evaluates the rule files built into the binary (alerts/*.rules.yml).
	Builtin bool
	// Files are more rule files (globs allowed). A group in them with the
	// name of a built-in group replaces the built-in one.
	Files []string
	// Interval between evaluations (default 15 s). With Options.Clock set,
	// each evaluation is stamped with the clock's time.
	Interval time.Duration
	// Alertmanagers are Alertmanager base URLs (http://host:9093); alerts go
	// to their API v2.
	Alertmanagers []string
	// ExternalURL is the server's URL as people reach it; alerts' generator
	// links point there.
	ExternalURL string
	// RunbookBase replaces alerts.RunbookBase in the built-in rules'
	// runbook_url annotations.
	RunbookBase string
	// OnAlert, when set, hears every alert that starts firing or resolves.
	OnAlert func(AlertEvent)
}

// AlertEvent is an alert starting to fire or resolving.
type AlertEvent struct {
	Name        string            `json:"name"`
	State       string            `json:"state"` // firing or resolved
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
	At          time.Time         `json:"at"`
}

// builtinPrefix marks a built-in rule file among the manager's files.
const builtinPrefix = "builtin:"

// ruleEngine is the rules manager and the notifier of one server.
type ruleEngine struct {
	opts     RulesOptions
	log      *slog.Logger
	clock    func() time.Time
	manager  *rules.Manager
	notifier *notifier.Manager
	tsets    chan map[string][]*targetgroup.Group
	loader   *ruleLoader

	mu     sync.Mutex
	firing map[uint64]bool

	once, stopOnce sync.Once
	wg             sync.WaitGroup
}

// startRules builds the rule engine over the embedded store.
func (s *Server) startRules(mux *http.ServeMux, reg prometheus.Registerer) error {
	ro := s.opts.Rules
	if ro == nil || s.embedded == nil {
		return nil
	}
	if ro.Interval <= 0 {
		ro.Interval = 15 * time.Second
	}
	log := s.opts.Logger.With("component", "rules")
	e := &ruleEngine{opts: *ro, log: log, clock: s.opts.Clock, firing: map[uint64]bool{},
		tsets: make(chan map[string][]*targetgroup.Group, 1)}
	p := parser.NewParser(parser.Options{})
	e.loader = &ruleLoader{parser: p, log: log, runbookBase: ro.RunbookBase}
	files, err := e.loader.prepare(ro.Builtin, ro.Files)
	if err != nil {
		return err
	}
	e.notifier = notifier.NewManager(&notifier.Options{QueueCapacity: 10000, Registerer: reg, DrainOnShutdown: true}, model.UTF8Validation, log.With("part", "notifier"))
	var amcs config.AlertmanagerConfigs
	targets := map[string][]*targetgroup.Group{}
	for i, raw := range ro.Alertmanagers {
		u, err := url.Parse(raw)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("--alertmanager.url %q: want http://host:9093", raw)
		}
		c := config.DefaultAlertmanagerConfig
		c.Scheme, c.PathPrefix = u.Scheme, strings.TrimRight(u.Path, "/")
		amcs = append(amcs, &c)
		targets[fmt.Sprintf("config-%d", i)] = []*targetgroup.Group{{Source: raw, Targets: []model.LabelSet{{model.AddressLabel: model.LabelValue(u.Host)}}}}
	}
	if err := e.notifier.ApplyConfig(&config.Config{AlertingConfig: config.AlertingConfig{AlertmanagerConfigs: amcs}}); err != nil {
		return fmt.Errorf("--alertmanager.url: %w", err)
	}
	e.tsets <- targets
	var ext *url.URL
	if ro.ExternalURL != "" {
		if ext, err = url.Parse(ro.ExternalURL); err != nil {
			return fmt.Errorf("--web.external-url %q: %w", ro.ExternalURL, err)
		}
	}
	send := sendAlerts(e.notifier, ro.ExternalURL)
	st := s.embedded
	e.manager = rules.NewManager(&rules.ManagerOptions{
		ExternalURL: ext,
		QueryFunc:   rules.EngineQueryFunc(st.Engine(), st.Queryable()),
		NotifyFunc: func(ctx context.Context, expr string, as ...*rules.Alert) {
			e.transitions(as)
			send(ctx, expr, as...)
		},
		Context:         context.Background(),
		Appendable:      st.Appendable(),
		Queryable:       st.Queryable(),
		Logger:          log,
		Registerer:      reg,
		OutageTolerance: time.Hour,
		ForGracePeriod:  10 * time.Minute,
		ResendDelay:     time.Minute,
		GroupLoader:     e.loader,
		Parser:          p,
	})
	if err := e.manager.Update(ro.Interval, files, labels.EmptyLabels(), ro.ExternalURL, e.iteration); err != nil {
		return fmt.Errorf("rules: %w", err)
	}
	s.rules = e
	mux.HandleFunc("GET /api/v1/alerts", e.handleAlerts)
	mux.HandleFunc("GET /api/v1/rules", e.handleRules)
	mux.HandleFunc("GET "+APIPrefix+"/alerts", e.handleAlerts)
	mux.HandleFunc("POST "+APIPrefix+"/rules/reload", func(w http.ResponseWriter, r *http.Request) {
		if err := e.reload(); err != nil {
			httpjson.Error(w, http.StatusBadRequest, err.Error())
			return
		}
		httpjson.Write(w, http.StatusOK, map[string]any{"groups": len(e.manager.RuleGroups())})
	})
	log.Info("evaluating rules", "groups", len(e.manager.RuleGroups()), "interval", ro.Interval, "alertmanagers", len(ro.Alertmanagers))
	return nil
}

// sendAlerts is Prometheus's rules.SendAlerts with gpuwatch's links: an
// alert's generator URL (Alertmanager's "Source" link) points at the web UI
// under --web.external-url, the node page with the alert's GPU highlighted
// (ui.AlertLink), instead of a Prometheus graph page the server does not have.
func sendAlerts(n *notifier.Manager, externalURL string) rules.NotifyFunc {
	return func(_ context.Context, _ string, as ...*rules.Alert) {
		if len(as) == 0 {
			return
		}
		out := make([]*notifier.Alert, 0, len(as))
		for _, a := range as {
			na := &notifier.Alert{StartsAt: a.FiredAt, Labels: a.Labels, Annotations: a.Annotations,
				GeneratorURL: ui.AlertLink(externalURL, a.Labels.Map()), EndsAt: a.ValidUntil}
			if !a.ResolvedAt.IsZero() {
				na.EndsAt = a.ResolvedAt
			}
			out = append(out, na)
		}
		n.Send(out...)
	}
}

// iteration evaluates a group at the server's clock (simulated time in the
// demo), else as Prometheus does.
func (e *ruleEngine) iteration(ctx context.Context, g *rules.Group, ts time.Time) {
	if e.clock != nil {
		ts = e.clock()
	}
	rules.DefaultEvalIterationFunc(ctx, g, ts)
}

// reload reads the rule files again (POST /api/gpuwatch/v1/rules/reload).
func (e *ruleEngine) reload() error {
	files, err := e.loader.prepare(e.opts.Builtin, e.opts.Files)
	if err != nil {
		return err
	}
	return e.manager.Update(e.opts.Interval, files, labels.EmptyLabels(), e.opts.ExternalURL, e.iteration)
}

// start runs the rules manager and the notifier, once: Prometheus's
// managers cannot be restarted, so they run from the first Server.Run until
// Server.Close, however often Run is called (the demo pauses its control
// loops).
func (e *ruleEngine) start() {
	e.once.Do(func() {
		e.wg.Add(2)
		go func() { defer e.wg.Done(); e.notifier.Run(e.tsets) }()
		go func() { defer e.wg.Done(); e.manager.Run() }()
	})
}

// stop stops evaluation and sends what is queued.
func (e *ruleEngine) stop() {
	// Prometheus's manager stops only groups that started: start it first
	// when Run was never called.
	e.start()
	e.stopOnce.Do(func() {
		e.manager.Stop()
		e.notifier.Stop()
		close(e.tsets)
		e.wg.Wait()
	})
}

// transitions tells OnAlert about alerts that start firing or resolve.
func (e *ruleEngine) transitions(as []*rules.Alert) {
	if e.opts.OnAlert == nil {
		return
	}
	var events []AlertEvent
	e.mu.Lock()
	for _, a := range as {
		h := a.Labels.Hash()
		ev := AlertEvent{Name: a.Labels.Get(labels.AlertName), Labels: a.Labels.Map(), Annotations: a.Annotations.Map()}
		switch {
		case a.ResolvedAt.IsZero() && a.State == rules.StateFiring && !e.firing[h]:
			e.firing[h] = true
			ev.State, ev.At = "firing", a.FiredAt
		case !a.ResolvedAt.IsZero() && e.firing[h]:
			delete(e.firing, h)
			ev.State, ev.At = "resolved", a.ResolvedAt
		default:
			continue
		}
		events = append(events, ev)
	}
	e.mu.Unlock()
	for _, ev := range events {
		e.opts.OnAlert(ev)
	}
}

// ActiveAlert is one pending or firing alert, as the Prometheus API lists it.
type ActiveAlert struct {
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
	State       string            `json:"state"`
	ActiveAt    time.Time         `json:"activeAt"`
	Value       string            `json:"value"`
}

// Alerts are the active alerts, firing first, then by name and labels.
func (e *ruleEngine) Alerts() []ActiveAlert {
	var out []ActiveAlert
	for _, r := range e.manager.AlertingRules() {
		for _, a := range r.ActiveAlerts() {
			out = append(out, ActiveAlert{Labels: a.Labels.Map(), Annotations: a.Annotations.Map(), State: a.State.String(),
				ActiveAt: a.ActiveAt, Value: fmt.Sprintf("%g", a.Value)})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].State != out[j].State {
			return out[i].State == "firing"
		}
		return fmt.Sprint(out[i].Labels) < fmt.Sprint(out[j].Labels)
	})
	return out
}

func (e *ruleEngine) handleAlerts(w http.ResponseWriter, r *http.Request) {
	httpjson.Write(w, http.StatusOK, map[string]any{"status": "success", "data": map[string]any{"alerts": e.Alerts()}})
}

func (e *ruleEngine) handleRules(w http.ResponseWriter, r *http.Request) {
	type ruleJSON struct {
		Name        string            `json:"name"`
		Type        string            `json:"type"`
		Query       string            `json:"query"`
		Duration    float64           `json:"duration,omitempty"`
		Labels      map[string]string `json:"labels,omitempty"`
		Annotations map[string]string `json:"annotations,omitempty"`
		Alerts      []ActiveAlert     `json:"alerts,omitempty"`
		Health      string            `json:"health"`
		LastError   string            `json:"lastError,omitempty"`
		State       string            `json:"state,omitempty"`
	}
	type groupJSON struct {
		Name     string     `json:"name"`
		File     string     `json:"file"`
		Interval float64    `json:"interval"`
		Rules    []ruleJSON `json:"rules"`
	}
	var groups []groupJSON
	for _, g := range e.manager.RuleGroups() {
		gj := groupJSON{Name: g.Name(), File: g.File(), Interval: g.Interval().Seconds()}
		for _, rl := range g.Rules() {
			rj := ruleJSON{Name: rl.Name(), Query: rl.Query().String(), Labels: rl.Labels().Map(), Health: string(rl.Health())}
			if err := rl.LastError(); err != nil {
				rj.LastError = err.Error()
			}
			switch ar := rl.(type) {
			case *rules.AlertingRule:
				rj.Type, rj.Duration, rj.Annotations, rj.State = "alerting", ar.HoldDuration().Seconds(), ar.Annotations().Map(), ar.State().String()
				for _, a := range ar.ActiveAlerts() {
					rj.Alerts = append(rj.Alerts, ActiveAlert{Labels: a.Labels.Map(), Annotations: a.Annotations.Map(), State: a.State.String(), ActiveAt: a.ActiveAt, Value: fmt.Sprintf("%g", a.Value)})
				}
			default:
				rj.Type = "recording"
			}
			gj.Rules = append(gj.Rules, rj)
		}
		groups = append(groups, gj)
	}
	httpjson.Write(w, http.StatusOK, map[string]any{"status": "success", "data": map[string]any{"groups": groups}})
}

// Alerts are the server's active alerts; nil without rule evaluation.
func (s *Server) Alerts() []ActiveAlert {
	if s.rules == nil {
		return nil
	}
	return s.rules.Alerts()
}

// ruleLoader loads the built-in rule files from the binary and the others
// from disk, drops built-in groups that a file replaces, and points the
// built-in runbook links at RunbookBase.
type ruleLoader struct {
	parser      parser.Parser
	log         *slog.Logger
	runbookBase string

	mu       sync.Mutex
	builtin  map[string][]byte
	replaced map[string]bool // group names the files define
}

// prepare expands the globs, checks every file, and returns the manager's
// list of files.
func (l *ruleLoader) prepare(builtin bool, patterns []string) ([]string, error) {
	var files []string
	replaced := map[string]bool{}
	for _, pat := range patterns {
		matches, err := filepath.Glob(pat)
		if err != nil {
			return nil, fmt.Errorf("--rules %q: %w", pat, err)
		}
		if len(matches) == 0 {
			if _, err := os.Stat(pat); err != nil {
				return nil, fmt.Errorf("--rules %q: no such file", pat)
			}
			matches = []string{pat}
		}
		for _, f := range matches {
			rgs, errs := rulefmt.ParseFile(f, false, model.UTF8Validation, l.parser, l.log)
			if len(errs) > 0 {
				return nil, fmt.Errorf("--rules %s: %w", f, errors.Join(errs...))
			}
			for _, g := range rgs.Groups {
				replaced[g.Name] = true
			}
			if !slices.Contains(files, f) {
				files = append(files, f)
			}
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.replaced = replaced
	l.builtin = map[string][]byte{}
	var ids []string
	if builtin {
		for name, b := range alerts.Builtin() {
			l.builtin[builtinPrefix+name] = b
			ids = append(ids, builtinPrefix+name)
		}
		sort.Strings(ids)
	}
	return append(ids, files...), nil
}

// Load implements rules.GroupLoader.
func (l *ruleLoader) Load(id string, ignoreUnknownFields bool, scheme model.ValidationScheme) (*rulefmt.RuleGroups, []error) {
	l.mu.Lock()
	b, ok := l.builtin[id]
	replaced := l.replaced
	l.mu.Unlock()
	if !ok {
		return rulefmt.ParseFile(id, ignoreUnknownFields, scheme, l.parser, l.log)
	}
	rgs, errs := rulefmt.Parse(b, ignoreUnknownFields, scheme, l.parser, l.log)
	if len(errs) > 0 {
		return nil, errs
	}
	kept := rgs.Groups[:0]
	for _, g := range rgs.Groups {
		if replaced[g.Name] {
			l.log.Info("a rule file replaces a built-in group", "group", g.Name)
			continue
		}
		if l.runbookBase != "" {
			for i := range g.Rules {
				if u, ok := g.Rules[i].Annotations["runbook_url"]; ok {
					g.Rules[i].Annotations["runbook_url"] = strings.Replace(u, alerts.RunbookBase, strings.TrimRight(l.runbookBase, "/")+"/", 1)
				}
			}
		}
		kept = append(kept, g)
	}
	rgs.Groups = kept
	return rgs, nil
}

// Parse implements rules.GroupLoader.
func (l *ruleLoader) Parse(q string) (parser.Expr, error) { return l.parser.ParseExpr(q) }
