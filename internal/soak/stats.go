package main

import (
	"fmt"
	"math"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// histogram counts durations in logarithmic buckets (5 % wide, 50 µs to
// about 100 s), so a 30-minute run keeps constant memory whatever its request
// count; a quantile is answered as its bucket's upper bound (at most 5 % high).
type histogram struct {
	mu     sync.Mutex
	counts [histBuckets + 1]uint64 // the last counts what is beyond the top
	n      uint64
	max    time.Duration
	sum    time.Duration
}

const (
	histMin     = 50 * time.Microsecond
	histGrowth  = 1.05
	histBuckets = 300 // 50 µs × 1.05^300 ≈ 115 s
)

func histBucket(d time.Duration) int {
	if d <= histMin {
		return 0
	}
	i := int(math.Ceil(math.Log(float64(d)/float64(histMin)) / math.Log(histGrowth)))
	return min(i, histBuckets)
}

func histUpper(i int) time.Duration {
	return time.Duration(float64(histMin) * math.Pow(histGrowth, float64(i)))
}

func (h *histogram) add(d time.Duration) {
	h.mu.Lock()
	h.counts[histBucket(d)]++
	h.n++
	h.sum += d
	h.max = max(h.max, d)
	h.mu.Unlock()
}

func (h *histogram) reset() {
	h.mu.Lock()
	h.counts, h.n, h.max, h.sum = [histBuckets + 1]uint64{}, 0, 0, 0
	h.mu.Unlock()
}

// summary is a histogram's count and quantiles.
type summary struct {
	N                  uint64
	P50, P99, Max, Avg time.Duration
}

func (h *histogram) summary() summary {
	h.mu.Lock()
	defer h.mu.Unlock()
	s := summary{N: h.n, Max: h.max}
	if h.n == 0 {
		return s
	}
	s.Avg = h.sum / time.Duration(h.n)
	q := func(p float64) time.Duration {
		rank := uint64(math.Ceil(p * float64(h.n)))
		var seen uint64
		for i, c := range h.counts {
			seen += c
			if seen >= rank {
				if i == histBuckets {
					return h.max
				}
				return min(histUpper(i), h.max)
			}
		}
		return h.max
	}
	s.P50, s.P99 = q(0.50), q(0.99)
	return s
}

func (s summary) String() string {
	if s.N == 0 {
		return "none"
	}
	return fmt.Sprintf("%d, p50 %s, p99 %s, max %s", s.N, ms(s.P50), ms(s.P99), ms(s.Max))
}

// ms prints a duration in milliseconds with sensible precision.
func ms(d time.Duration) string {
	v := float64(d) / float64(time.Millisecond)
	switch {
	case v >= 100:
		return fmt.Sprintf("%.0f ms", v)
	case v >= 10:
		return fmt.Sprintf("%.1f ms", v)
	default:
		return fmt.Sprintf("%.2f ms", v)
	}
}

// requestMeter times the HTTP requests the agents make, by kind (remote write,
// health push), from the call to the server's answer (its status line and
// headers): for a health push that is the moment the server said 202.
type requestMeter struct {
	mu    sync.Mutex
	kinds map[string]*requestKind
	// stopped is set when the soak shuts the agents down: requests their
	// cancelled context ends are not failures.
	stopped atomic.Bool
}

type requestKind struct {
	lat    histogram
	window histogram      // since the last reading
	codes  map[int]uint64 // by status code; 0: no answer (a transport error)
	errors []string       // the first few transport errors and non-2xx answers
}

func newRequestMeter() *requestMeter {
	return &requestMeter{kinds: map[string]*requestKind{}}
}

func (m *requestMeter) kind(k string) *requestKind {
	m.mu.Lock()
	defer m.mu.Unlock()
	rk := m.kinds[k]
	if rk == nil {
		rk = &requestKind{codes: map[int]uint64{}}
		m.kinds[k] = rk
	}
	return rk
}

func (m *requestMeter) record(k string, d time.Duration, code int, err error) {
	if err != nil && m.stopped.Load() {
		return
	}
	rk := m.kind(k)
	rk.lat.add(d)
	rk.window.add(d)
	m.mu.Lock()
	rk.codes[code]++
	if (err != nil || code/100 != 2) && len(rk.errors) < 5 {
		msg := fmt.Sprintf("HTTP %d", code)
		if err != nil {
			msg = err.Error()
		}
		rk.errors = append(rk.errors, msg)
	}
	m.mu.Unlock()
}

// window returns a kind's latencies since the previous call and starts anew.
func (m *requestMeter) window(k string) summary {
	rk := m.kind(k)
	s := rk.window.summary()
	rk.window.reset()
	return s
}

// codes returns a copy of a kind's status counts.
func (m *requestMeter) codes(k string) map[int]uint64 {
	rk := m.kind(k)
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make(map[int]uint64, len(rk.codes))
	for c, n := range rk.codes {
		out[c] = n
	}
	return out
}

func (m *requestMeter) errors(k string) []string {
	rk := m.kind(k)
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string(nil), rk.errors...)
}

// meteredTransport is the agent's transport with the meter around it.
type meteredTransport struct {
	next  http.RoundTripper
	meter *requestMeter
}

// Request kinds.
const (
	kindWrite = "remote write"
	kindPush  = "health push"
)

func (t *meteredTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	kind := kindWrite
	if strings.HasSuffix(r.URL.Path, "/health") {
		kind = kindPush
	}
	t0 := time.Now()
	resp, err := t.next.RoundTrip(r)
	d := time.Since(t0)
	code := 0
	if resp != nil {
		code = resp.StatusCode
	}
	t.meter.record(kind, d, code, err)
	return resp, err
}

// flatness compares the mean of the last third of a series of readings with
// the mean of its first third. Only growth counts against it: a soak looks for
// what leaks, and fewer goroutines or less memory at the end (connections of a
// stall in the warm-up closed, a heap's sawtooth lower) is not a leak.
type flatness struct {
	First, Last float64
	Change      float64 // (Last-First)/First
	Tolerance   float64 // allowed growth (Change); Slack is added in absolute units
	Slack       float64
	OK          bool
}

func flat(vals []float64, tolerance, slack float64) flatness {
	f := flatness{Tolerance: tolerance, Slack: slack}
	n := len(vals) / 3
	if n == 0 {
		f.OK = true
		return f
	}
	mean := func(xs []float64) float64 {
		s := 0.0
		for _, x := range xs {
			s += x
		}
		return s / float64(len(xs))
	}
	f.First, f.Last = mean(vals[:n]), mean(vals[len(vals)-n:])
	if f.First != 0 {
		f.Change = (f.Last - f.First) / f.First
	}
	f.OK = f.Last-f.First <= tolerance*math.Abs(f.First)+slack
	return f
}
