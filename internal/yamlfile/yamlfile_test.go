package yamlfile

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

type level int

func (l *level) UnmarshalText(b []byte) error {
	switch string(b) {
	case "low":
		*l = 1
	case "high":
		*l = 2
	default:
		return fmt.Errorf("level %q: want low or high", b)
	}
	return nil
}

type sample struct {
	Name   string            `yaml:"name"`
	Count  int               `yaml:"count"`
	Ratio  float64           `yaml:"ratio"`
	On     bool              `yaml:"on"`
	Every  time.Duration     `yaml:"every"`
	Level  level             `yaml:"level"`
	Limit  *uint             `yaml:"limit"`
	Tags   []string          `yaml:"tags"`
	Labels map[string]string `yaml:"labels"`
	Items  []item            `yaml:"items"`
}

type item struct {
	ID   int    `yaml:"id"`
	Kind string `yaml:"kind"`
}

func parse(t *testing.T, doc string) (*Doc, sample, error) {
	t.Helper()
	d, err := Parse("f.yaml", []byte(doc), 1<<20)
	if err != nil {
		return nil, sample{}, err
	}
	s := sample{Name: "default", Count: 7}
	err = d.Decode(&s)
	return d, s, err
}

func TestDecode(t *testing.T) {
	d, s, err := parse(t, `name: x
count: 3
ratio: 0.5
on: true
every: 90s
level: high
limit: 4
tags: [a, b]
labels: {k: v}
items:
  - {id: 1, kind: a}
  - id: 2
`)
	if err != nil {
		t.Fatal(err)
	}
	if s.Name != "x" || s.Count != 3 || s.Ratio != 0.5 || !s.On || s.Every != 90*time.Second || s.Level != 2 ||
		s.Limit == nil || *s.Limit != 4 || strings.Join(s.Tags, ",") != "a,b" || s.Labels["k"] != "v" ||
		len(s.Items) != 2 || s.Items[1].ID != 2 {
		t.Fatalf("%+v", s)
	}
	for path, line := range map[string]int{"": 1, "count": 2, "items[1]": 12, "items[1].id": 12, "items[1].kind": 12, "items[0].kind": 11, "nope.deeper": 1} {
		if got := d.Line(path); got != line {
			t.Errorf("Line(%q) = %d, want %d", path, got, line)
		}
	}
	if v := d.Value("every"); v != "90s" {
		t.Errorf("Value(every) = %q", v)
	}
	if v := d.Value("items[1].kind"); v != "" {
		t.Errorf("Value of a missing field = %q", v)
	}
	// Left out or null: the value it had.
	_, s, err = parse(t, "count:\nratio: 2\n")
	if err != nil || s.Name != "default" || s.Count != 7 || s.Ratio != 2 {
		t.Fatalf("%+v %v", s, err)
	}
}

func TestErrors(t *testing.T) {
	for _, tc := range []struct{ name, doc, want string }{
		{"unknown field", "nmae: x\n", `f.yaml:1: nmae: unknown field, did you mean "name"? (want one of name, count, ratio, on, every, level, limit, tags, labels, items)`},
		{"unknown nested field", "items:\n  - id: 1\n    knd: a\n", `f.yaml:3: items[0].knd: unknown field, did you mean "kind"? (want one of id, kind)`},
		{"twice", "on: true\non: false\n", "f.yaml:2: on: given twice"},
		{"not a mapping", "- 1\n", "f.yaml:1: want a mapping with keys name, count,"},
		{"not a list", "tags: {a: b}\n", "f.yaml:1: tags: want a list, got a mapping"},
		{"list for a value", "name: [a]\n", "f.yaml:1: name: want a single value, got a list"},
		{"bad int", "count: 3.5\n", `f.yaml:1: count: "3.5" is not a whole number`},
		{"bad uint", "limit: -1\n", `f.yaml:1: limit: "-1" is not a whole number of at least 0`},
		{"bad float", "ratio: .nan\n", `f.yaml:1: ratio: ".nan" is not a number`},
		{"bad bool", "on: yes\n", `f.yaml:1: on: "yes" is not true or false`},
		{"bad duration", "every: 5 minutes\n", `f.yaml:1: every: "5 minutes" is not a duration (write e.g. 30s, 10m, 1h)`},
		{"text unmarshaler", "level: mid\n", `f.yaml:1: level: level "mid": want low or high`},
		{"key not plain", "{a: 1}: 2\n", "f.yaml:1: a key must be a plain name"},
		{"invalid YAML", "a: [\n", "f.yaml:1: invalid YAML: "},
		{"two documents", "count: 1\n---\ncount: 2\n", "f.yaml:2: more than one YAML document"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := parse(t, tc.doc)
			if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
				t.Fatalf("error\n %v\nwant one starting\n %s", err, tc.want)
			}
			var e *Error
			if !errors.As(err, &e) || e.File != "f.yaml" {
				t.Fatalf("%T is not an *Error naming the file", err)
			}
		})
	}
	// Every problem at once, each at its line; a bad value keeps the old one.
	_, s, err := parse(t, "count: x\nname: ok\nratio: y\n")
	if err == nil || !strings.Contains(err.Error(), "f.yaml:1: count:") || !strings.Contains(err.Error(), "f.yaml:3: ratio:") || s.Count != 7 || s.Name != "ok" {
		t.Fatalf("%v %+v", err, s)
	}
	// Errorf: a missing field is reported where its parent is.
	d, _, _ := parse(t, "items:\n  - id: 1\n")
	d.Errorf("items[0].kind", "missing")
	d.Errorf("", "whole")
	if got := d.Err().Error(); got != "f.yaml:2: items[0].kind: missing\nf.yaml:1: whole" {
		t.Errorf("Errorf: %q", got)
	}
	// Size.
	if _, err := Parse("f.yaml", []byte("count: 1\n"), 4); err == nil || err.Error() != "f.yaml: file is 9 bytes, more than the 4 allowed" {
		t.Errorf("size: %v", err)
	}
}

// TestAliasBombBounded: nested aliases multiply ("billion laughs"); Decode
// stops following them after maxAliases and says so.
func TestAliasBombBounded(t *testing.T) {
	d, err := Parse("f.yaml", []byte("x: &x [[], []]\ny: &y [*x, *x, *x, *x, *x, *x, *x, *x, *x, *x]\nz: &z [*y, *y, *y, *y, *y, *y, *y, *y, *y, *y]\n"+
		"w: &w [*z, *z, *z, *z, *z, *z, *z, *z, *z, *z]\nv: [*w, *w, *w, *w, *w, *w, *w, *w, *w, *w]\n"), 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	type nest []nest
	var m map[string]nest
	if err := d.Decode(&m); err == nil || !strings.Contains(err.Error(), "more than 1000 aliases to follow") {
		t.Fatalf("alias bomb: %v", err)
	}
}

// FuzzDecode: any input decodes or fails with errors that are each an *Error
// naming the file, with a line unless the problem is the whole file's.
func FuzzDecode(f *testing.F) {
	f.Add([]byte("name: x\ncount: 3\nitems: [{id: 1}]\n"))
	f.Add([]byte("&a [*a]"))
	f.Add([]byte("labels: {a: &b x, c: *b}\n"))
	f.Add([]byte("every: 0\nlevel: low\nlimit: ~\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		d, err := Parse("f.yaml", data, 1<<16)
		if err == nil {
			var s sample
			err = d.Decode(&s)
		}
		if err == nil {
			return
		}
		errs := []error{err}
		if j, ok := err.(interface{ Unwrap() []error }); ok {
			errs = j.Unwrap()
		}
		if len(errs) > MaxErrors {
			t.Fatalf("%d errors", len(errs))
		}
		for _, e := range errs {
			var ye *Error
			if !errors.As(e, &ye) || ye.File != "f.yaml" {
				t.Fatalf("%q is not an *Error naming the file", e)
			}
			if ye.Line == 0 && !strings.HasPrefix(ye.Msg, "file is") && !strings.Contains(ye.Msg, "alias") &&
				!strings.Contains(ye.Msg, "contains itself") && !strings.Contains(ye.Msg, "past the end") {
				t.Fatalf("%q has no line", e)
			}
		}
	})
}
