package faults

import (
	"net/url"
	"reflect"
	"testing"
	"time"
)

// FuzzParseQuery: any query string either is refused with an error or gives
// options that the report accepts and that Query writes back to the same.
func FuzzParseQuery(f *testing.F) {
	for _, s := range []string{"", "last=24h", "from=2026-11-01T00:00:00Z&to=2026-11-08T00:00:00Z&lemon_count=2&lemon_window=72h&top=5",
		"last=-1h", "from=2026-11-08T00:00:00Z&to=2026-11-01T00:00:00Z", "top=0", "lemon_window=1ns", "last=9999999h"} {
		f.Add(s)
	}
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	name := func(p string) string { return p }
	f.Fuzz(func(t *testing.T, raw string) {
		v, err := url.ParseQuery(raw)
		if err != nil {
			return
		}
		o, err := ParseQuery(v, now, name)
		if err != nil {
			return
		}
		c := o
		if err := c.defaults(); err != nil {
			t.Fatalf("%q parsed but the report refuses it: %v", raw, err)
		}
		if c.step() < 15*time.Second {
			t.Fatalf("%q: step %s", raw, c.step())
		}
		// RFC 3339 in seconds: the round trip is exact from whole seconds on.
		o.From, o.To = o.From.Truncate(time.Second), o.To.Truncate(time.Second)
		if !o.To.After(o.From) {
			return
		}
		back, err := ParseQuery(o.Query(), now, name)
		if err != nil || !reflect.DeepEqual(back.Query(), o.Query()) {
			t.Fatalf("%q: round trip %v, %v", raw, back.Query(), err)
		}
	})
}
