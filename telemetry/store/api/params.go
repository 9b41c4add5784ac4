package api

import (
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
)

// MinTime and MaxTime are the bounds series, labels and label values use when a
// request gives no start or end: Prometheus's own.
var (
	MinTime = time.Unix(math.MinInt64/1000+62135596801, 0).UTC()
	MaxTime = time.Unix(math.MaxInt64/1000-62135596801, 999999999).UTC()

	minTimeFormatted = MinTime.Format(time.RFC3339Nano)
	maxTimeFormatted = MaxTime.Format(time.RFC3339Nano)
)

// ParseTime parses a time parameter as Prometheus does: unix seconds with an
// optional fraction (rounded to the millisecond), or RFC 3339.
func ParseTime(s string) (time.Time, error) {
	if t, err := strconv.ParseFloat(s, 64); err == nil {
		if math.IsNaN(t) || t < float64(MinTime.Unix()) || t > float64(MaxTime.Unix()) {
			return time.Time{}, fmt.Errorf("cannot parse %q to a valid timestamp", s)
		}
		sec, frac := math.Modf(t)
		frac = math.Round(frac*1000) / 1000
		return time.Unix(int64(sec), int64(frac*float64(time.Second))).UTC(), nil
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	switch s {
	case minTimeFormatted:
		return MinTime, nil
	case maxTimeFormatted:
		return MaxTime, nil
	}
	return time.Time{}, fmt.Errorf("cannot parse %q to a valid timestamp", s)
}

// ParseDuration parses a step or timeout as Prometheus does: float seconds, or a
// Prometheus duration such as "15s" or "1h30m".
func ParseDuration(s string) (time.Duration, error) {
	if d, err := strconv.ParseFloat(s, 64); err == nil {
		ts := d * float64(time.Second)
		if math.IsNaN(ts) || ts > float64(math.MaxInt64) || ts < float64(math.MinInt64) {
			return 0, fmt.Errorf("cannot parse %q to a valid duration. It overflows int64", s)
		}
		return time.Duration(ts), nil
	}
	if d, err := model.ParseDuration(s); err == nil {
		return time.Duration(d), nil
	}
	return 0, fmt.Errorf("cannot parse %q to a valid duration", s)
}

// timeParam reads the time parameter name of r, def when it is absent.
func timeParam(r *http.Request, name string, def time.Time) (time.Time, error) {
	v := r.FormValue(name)
	if v == "" {
		return def, nil
	}
	t, err := ParseTime(v)
	if err != nil {
		//lint:ignore ST1005 Prometheus's own error text, which clients may match.
		return time.Time{}, invalidParam(fmt.Errorf("Invalid time value for '%s': %w", name, err), name)
	}
	return t, nil
}

func invalidParam(err error, name string) error {
	return fmt.Errorf("invalid parameter %q: %w", name, err)
}

var selectorParser = parser.NewParser(parser.Options{})

// ParseMatchers parses match[] selectors; each needs a matcher that does not
// match the empty string, so that one selector cannot ask for every series.
func ParseMatchers(selectors []string) ([][]*labels.Matcher, error) {
	sets := make([][]*labels.Matcher, 0, len(selectors))
	for _, s := range selectors {
		ms, err := selectorParser.ParseMetricSelector(s)
		if err != nil {
			return nil, err
		}
		sets = append(sets, ms)
	}
outer:
	for _, ms := range sets {
		for _, m := range ms {
			if !m.Matches("") {
				continue outer
			}
		}
		return nil, errors.New("match[] must contain at least one non-empty matcher")
	}
	return sets, nil
}

// limitParam reads the optional limit parameter: 0 (no limit) when absent.
func limitParam(r *http.Request) (int, error) {
	s := r.FormValue("limit")
	if s == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		return 0, errors.New("limit must be a non-negative number")
	}
	return n, nil
}
