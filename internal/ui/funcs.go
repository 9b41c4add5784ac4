package ui

import (
	"fmt"
	"html/template"
	"math"
	"net/url"
	"sort"
	"strings"
	"time"

	"github.com/gpuwatch/gpuwatch/scheduler/fairshare"
	"github.com/gpuwatch/gpuwatch/telemetry"
)

// cellState is what a fleet cell shows: the health states, and unknown.
type cellState uint8

const (
	cellHealthy cellState = iota
	cellSuspect
	cellDraining
	cellDrained
	cellProbation
	cellUnknown // no health observed, or stale
	numCellStates
)

// stateInfo is a state's legend entry: its class (the colour), its glyph (the
// cue that does not rely on colour) and its words.
var stateInfo = [numCellStates]struct{ Key, Class, Glyph, Label, Meaning string }{
	{"healthy", "s0", "", "healthy", "schedulable, no condition"},
	{"suspect", "s1", "!", "suspect", "a warning-level condition: schedulable, scored down"},
	{"draining", "s2", "↓", "draining", "no new work; running work finishes or is stopped"},
	{"drained", "s3", "×", "drained", "out of service until reset or repaired"},
	{"probation", "s4", "~", "probation", "back after a reset or reboot, watched closely"},
	{"unknown", "s5", "?", "unknown", "no recent health report (stale or never seen)"},
}

func fromState(s telemetry.State) cellState {
	if s.Valid() {
		return cellState(s)
	}
	return cellUnknown
}

// severityRank orders cell states by how much on-call should look: drained
// first, healthy last.
var severityRank = [numCellStates]int{cellHealthy: 0, cellProbation: 1, cellUnknown: 2, cellSuspect: 3, cellDraining: 4, cellDrained: 5}

func worse(a, b cellState) cellState {
	if severityRank[b] > severityRank[a] {
		return b
	}
	return a
}

var funcs = template.FuncMap{
	"nodeURL": func(node string) string { return nodeURL(node, -1) },
	"gpuNodeURL": func(node string, gpu int) string {
		return nodeURL(node, gpu)
	},
	"gpuURL": func(node string, gpu int) string {
		return fmt.Sprintf("/node/%s/gpu/%d", url.PathEscape(node), gpu)
	},
	"time": func(t time.Time) string {
		if t.IsZero() {
			return "—"
		}
		return t.UTC().Format("2006-01-02 15:04:05Z")
	},
	"clock": func(t time.Time) string {
		if t.IsZero() {
			return "—"
		}
		return t.UTC().Format("15:04:05")
	},
	"ago": func(now, t time.Time) string {
		if t.IsZero() {
			return "never"
		}
		return humanDuration(now.Sub(t)) + " ago"
	},
	"dur": humanDuration,
	"state": func(s telemetry.State) map[string]string {
		i := stateInfo[fromState(s)]
		return map[string]string{"Class": i.Class, "Glyph": i.Glyph, "Label": i.Label}
	},
	"sev":           func(s telemetry.Severity) string { return "sev-" + s.String() },
	"actionMeaning": actionMeaning,
	"num": func(v float64) string {
		switch {
		case math.IsNaN(v):
			return "—"
		case v == math.Trunc(v) && math.Abs(v) < 1e15:
			return fmt.Sprintf("%.0f", v)
		case math.Abs(v) >= 100:
			return fmt.Sprintf("%.0f", v)
		default:
			return fmt.Sprintf("%.3g", v)
		}
	},
	"pct": func(v float64) string {
		if math.IsNaN(v) {
			return "—"
		}
		return fmt.Sprintf("%.0f%%", 100*v)
	},
	"join": strings.Join,
	"sortedKeys": func(m map[string]string) []string {
		ks := make([]string, 0, len(m))
		for k := range m {
			ks = append(ks, k)
		}
		sort.Strings(ks)
		return ks
	},
	"indent":  func(depth int) string { return "d" + fmt.Sprint(min(depth, 6)) },
	"legend":  func() any { return stateInfo[:] },
	"add":     func(a, b int) int { return a + b },
	"hours":   func(s float64) string { return fmt.Sprintf("%.1f", s/3600) },
	"seconds": func(s float64) time.Duration { return time.Duration(s * float64(time.Second)) },
	"factor": func(n fairshare.Number) string {
		f := float64(n)
		switch {
		case math.IsNaN(f):
			return "—"
		case math.IsInf(f, 1):
			return "inf"
		}
		return fmt.Sprintf("%.3f", f)
	},
	"dict": func(kv ...any) map[string]any {
		m := map[string]any{}
		for i := 0; i+1 < len(kv); i += 2 {
			m[fmt.Sprint(kv[i])] = kv[i+1]
		}
		return m
	},
}

// actionMeaning is the Xid catalog's meaning of a recommended action.
func actionMeaning(a telemetry.Action) string {
	if a == telemetry.ActionNone {
		return ""
	}
	if b, ok := telemetry.LookupXidBucket(string(a)); ok {
		return b.Meaning
	}
	return ""
}

func humanDuration(d time.Duration) string {
	if d < 0 {
		d = -d
	}
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
	default:
		return fmt.Sprintf("%dd", int(d.Hours()/24))
	}
}
