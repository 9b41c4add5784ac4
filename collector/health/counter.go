package health

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// seriesKey identifies one input series without building a string: the sample name
// and the labels that tell its series apart. Unused fields are -1 or "".
type seriesKey struct {
	name string
	gpu  int
	link int
	dev  string
	port int
}

// String is the key's persisted form: "name|gpu|link|dev|port".
func (k seriesKey) String() string {
	return k.name + "|" + strconv.Itoa(k.gpu) + "|" + strconv.Itoa(k.link) + "|" + k.dev + "|" + strconv.Itoa(k.port)
}

// parseSeriesKey reads String's form back.
func parseSeriesKey(s string) (seriesKey, error) {
	parts := strings.Split(s, "|")
	if len(parts) != 5 || parts[0] == "" {
		return seriesKey{}, fmt.Errorf("series key %q: want name|gpu|link|device|port", s)
	}
	var k seriesKey
	k.name, k.dev = parts[0], parts[3]
	for i, p := range []*int{&k.gpu, &k.link, nil, &k.port} {
		if p == nil {
			continue
		}
		n, err := strconv.Atoi(parts[i+1])
		if err != nil || n < -1 {
			return seriesKey{}, fmt.Errorf("series key %q: field %d: %q is not an index", s, i+2, parts[i+1])
		}
		*p = n
	}
	return k, nil
}

// checkpoint is a counter value at a time, for windowed deltas.
type checkpoint struct {
	t time.Time
	v float64
}

// counter is the engine's memory of one counter series: its baseline, its last
// value, and checkpoints spanning the rule's window.
type counter struct {
	base, last float64
	lastT      time.Time
	cps        []checkpoint
	seen       uint64 // cycle it was last observed
}

// counterStep is what one observation of a counter says.
type counterStep struct {
	delta     float64       // growth since the previous observation (0 on the first and on a reset)
	winDelta  float64       // growth over the window (up to the window's length)
	winSpan   time.Duration // time the window delta covers
	sinceBase float64       // growth since the baseline
	first     bool          // first value ever seen: it became the baseline
	reset     bool          // the value went down: rebased
}

// observe records value v at now. The checkpoints are spaced window/8 apart and
// cover the window, so the window delta misses at most window/8 of its start.
func (c *counter) observe(now time.Time, v float64, window time.Duration, isNew bool) counterStep {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return counterStep{}
	}
	if isNew {
		c.base, c.last, c.lastT = v, v, now
		c.cps = append(c.cps[:0], checkpoint{now, v})
		return counterStep{first: true}
	}
	if v < c.last {
		// A counter that goes down was reset (driver reload, GPU reset, a new
		// boot): the new value is the new baseline.
		c.base, c.last, c.lastT = v, v, now
		c.cps = append(c.cps[:0], checkpoint{now, v})
		return counterStep{reset: true}
	}
	if now.Before(c.lastT) {
		// The clock stepped back. Move the window's checkpoints with it, as if
		// no time had passed since the last observation: on the stepped clock
		// they would lie in the future, stay in the window until the clock
		// caught up, and make it span its length plus the step (a growth or a
		// rate over it read too high). A step forward needs nothing: the
		// window then covers less than its length, never more.
		d := now.Sub(c.lastT)
		for i := range c.cps {
			c.cps[i].t = c.cps[i].t.Add(d)
		}
	}
	st := counterStep{delta: v - c.last, sinceBase: v - c.base}
	// Forget checkpoints older than the window; with none left, the previous
	// observation is the window's start (growth over a gap longer than the window
	// counts, since nothing tells when within the gap it happened).
	start := now.Add(-window)
	drop := 0
	for drop < len(c.cps) && c.cps[drop].t.Before(start) {
		drop++
	}
	c.cps = append(c.cps[:0], c.cps[drop:]...)
	if len(c.cps) == 0 {
		c.cps = append(c.cps, checkpoint{c.lastT, c.last})
	}
	st.winDelta = v - c.cps[0].v
	st.winSpan = now.Sub(c.cps[0].t)
	c.last, c.lastT = v, now
	if n := len(c.cps); now.Sub(c.cps[n-1].t) >= window/8 {
		c.cps = append(c.cps, checkpoint{now, v})
	}
	return st
}
