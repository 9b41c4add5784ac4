package report

import (
	"net/url"
	"reflect"
	"strings"
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
	// Filters: repeated parameters, exact values; they round-trip.
	f, err := ParseQuery(url.Values{"last": {"24h"}, "account": {"nlp", "vision"}, "user": {"bob"}, "namespace": {"ml team"}}, now)
	if want := (Filter{Accounts: []string{"nlp", "vision"}, Users: []string{"bob"}, Namespaces: []string{"ml team"}}); err != nil || !reflect.DeepEqual(f.Filter, want) {
		t.Errorf("filter: %+v %v", f.Filter, err)
	}
	if back, err := ParseQuery(f.Query(), now); err != nil || !reflect.DeepEqual(back.Filter, f.Filter) {
		t.Errorf("the filter does not round-trip: %+v %v", back.Filter, err)
	}
	if o.Filter.String() != "" || f.Filter.String() != "account nlp, vision; user bob; namespace ml team" {
		t.Errorf("filter strings %q, %q", o.Filter, f.Filter)
	}
	for _, c := range []struct{ query, param string }{
		{"account=", "account"}, {"account=a&account=", "account"}, {"user=" + strings.Repeat("x", MaxFilterValue+1), "user"},
		{"namespace=a%00b", "namespace"},
	} {
		v, err := url.ParseQuery(c.query)
		if err != nil {
			t.Fatal(err)
		}
		_, err = ParseQuery(v, now)
		if err == nil || !strings.HasPrefix(err.Error(), c.param) {
			t.Errorf("%.60s: %v, want an error naming %s", c.query, err, c.param)
		}
	}
	if _, err := ParseQuery(url.Values{"user": make([]string, MaxFilterValues+1)}, now); err == nil || !strings.Contains(err.Error(), "at most") {
		t.Errorf("%d users: %v", MaxFilterValues+1, err)
	}
	// Control: the longest value is taken.
	if _, err := ParseQuery(url.Values{"user": {strings.Repeat("x", MaxFilterValue)}}, now); err != nil {
		t.Errorf("a %d-byte user: %v", MaxFilterValue, err)
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
		"step=1ms", "idle_for=1s&step=1h", "account=nlp&account=vision&user=bob", "account=&user=x", "namespace=a%00", "by=team", "last=-1h", "from=2026-11-02T00:00:00Z&to=2026-11-01T00:00:00Z"} {
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
		for _, vals := range [][]string{o.Filter.Accounts, o.Filter.Users, o.Filter.Namespaces} {
			for _, x := range vals {
				if x == "" || len(x) > MaxFilterValue {
					t.Fatalf("accepted %q with filter value %q", raw, x)
				}
			}
		}
		if back, err := ParseQuery(o.Query(), now); err != nil || !reflect.DeepEqual(back.Filter, o.Filter) {
			t.Fatalf("accepted %q; its Query %v gives %+v, %v", raw, o.Query(), back.Filter, err)
		}
	})
}
