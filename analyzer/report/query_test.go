package report

import (
	"net/url"
	"testing"
	"time"
)

func TestParseQuery(t *testing.T) {
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	o, err := ParseQuery(url.Values{"last": {"168h"}, "by": {"node"}, "idle_below": {"10%"}, "idle_for": {"1h"}, "step": {"5m"}}, now)
	if err != nil || !o.From.Equal(now.Add(-168*time.Hour)) || o.By != ByNode || o.IdleBelow != 0.1 || o.IdleFor != time.Hour || o.Step != 5*time.Minute {
		t.Errorf("%+v %v", o, err)
	}
	back, err := ParseQuery(o.Query(), now)
	if err != nil || !back.From.Equal(o.From) || !back.To.Equal(o.To) || back.By != o.By || back.IdleBelow != o.IdleBelow || back.Step != o.Step {
		t.Errorf("Query does not round-trip: %+v %v", back, err)
	}
	for _, p := range []string{"5%", "0.05", " 5 % "} {
		if v, err := ParsePercent(p); err != nil || v != 0.05 {
			t.Errorf("ParsePercent(%q) = %v, %v", p, v, err)
		}
	}
	for _, p := range []string{"5", "-1%", "101%", "x"} {
		if _, err := ParsePercent(p); err == nil {
			t.Errorf("ParsePercent(%q) accepted", p)
		}
	}
}

// FuzzParseQuery: whatever a client sends, parsing does not panic, and what
// it accepts is a usable window.
func FuzzParseQuery(f *testing.F) {
	for _, s := range []string{"last=24h&by=account", "from=2026-11-01T00:00:00Z&to=2026-11-02T00:00:00Z&idle_below=5%25",
		"step=1ms", "idle_for=1s&step=1h", "by=team", "last=-1h", "from=2026-11-02T00:00:00Z&to=2026-11-01T00:00:00Z"} {
		f.Add(s)
	}
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, raw string) {
		v, err := url.ParseQuery(raw)
		if err != nil {
			return
		}
		o, err := ParseQuery(v, now)
		if err != nil {
			return
		}
		if err := o.defaults(); err != nil {
			t.Fatalf("accepted %q, then: %v", raw, err)
		}
		if !o.To.After(o.From) || o.IdleBelow < 0 || o.IdleBelow > 1 || o.Step <= 0 || o.To.Sub(o.From)/o.Step > MaxSteps {
			t.Fatalf("accepted %q as %+v", raw, o)
		}
		if _, err := ParseBy(string(o.By)); err != nil {
			t.Fatalf("accepted %q with by %q", raw, o.By)
		}
	})
}
