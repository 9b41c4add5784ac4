package telemetry

import (
	"sort"
	"strings"
	"time"
)

// Label is one name/value pair on a series.
type Label struct {
	Name  string
	Value string
}

// Labels is a set of labels kept sorted by name; build it with NewLabels.
type Labels []Label

// NewLabels builds Labels from alternating name, value arguments and sorts them by
// name. An odd trailing name is dropped. Empty values are kept: callers decide
// whether "" means absent.
func NewLabels(kv ...string) Labels {
	ls := make(Labels, 0, len(kv)/2)
	for i := 0; i+1 < len(kv); i += 2 {
		ls = append(ls, Label{Name: kv[i], Value: kv[i+1]})
	}
	sort.Slice(ls, func(i, j int) bool { return ls[i].Name < ls[j].Name })
	return ls
}

// Get returns the value of the label called name, or "".
func (ls Labels) Get(name string) string {
	for _, l := range ls {
		if l.Name == name {
			return l.Value
		}
	}
	return ""
}

// String renders the labels as {a="1",b="2"}.
func (ls Labels) String() string {
	var b strings.Builder
	b.WriteByte('{')
	for i, l := range ls {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(l.Name)
		b.WriteString(`="`)
		b.WriteString(l.Value)
		b.WriteByte('"')
	}
	b.WriteByte('}')
	return b.String()
}

// Sample is one observed value of one series. Every sample carries the time it was
// observed so consumers can reject stale data; the zero Time means "now, at
// collection", which the exporter fills in.
type Sample struct {
	Name   string
	Labels Labels
	Value  float64
	Time   time.Time
}
