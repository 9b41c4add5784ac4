package stragglers

import (
	"net/url"
	"reflect"
	"testing"
	"time"
)

// FuzzParseQuery: any query string either is refused with an error or gives
// options that Compute accepts (a window of one step or more) and that Query
// writes back to the same.
func FuzzParseQuery(f *testing.F) {
	for _, s := range []string{"", "last=10m", "from=2026-11-25T11:00:00Z&to=2026-11-25T11:10:00Z&min_gap=15%25&min_duration=3m&job_id=j1",
		"last=1s", "min_gap=0", "min_gap=1", "min_gap=0.5", "min_duration=-1m", "last=9999999h", "job_id=ns%2Fpod"} {
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
			t.Fatalf("%q parsed but Compute refuses it: %v", raw, err)
		}
		if c.Step < 15*time.Second || c.To.Sub(c.From) < c.Step || c.MinGap <= 0 || c.MinGap >= 1 {
			t.Fatalf("%q: options %+v", raw, c)
		}
		// RFC 3339 in seconds: the round trip is exact from whole seconds on.
		o.From, o.To = o.From.Truncate(time.Second), o.To.Truncate(time.Second)
		if o.To.Sub(o.From) < c.Step {
			return
		}
		back, err := ParseQuery(o.Query(), now, name)
		if err != nil || !reflect.DeepEqual(back.Query(), o.Query()) {
			t.Fatalf("%q: round trip %v, %v", raw, back.Query(), err)
		}
	})
}
