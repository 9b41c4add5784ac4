// Package yamlfile is the one way gpuwatch reads a YAML file a person wrote
// (the drain policy, the fair-share configuration, fault scenarios, the token
// file): one document, decoded into a Go struct by its `yaml` tags, strictly,
// with every problem said as
//
//	FILE:LINE: FIELD: problem
//
// (for example "drain.yaml:12: rules[2].mode: unknown mode "evict""). The
// decoder refuses unknown and repeated keys (naming the fields allowed), values
// of the wrong shape or type, and finds every such problem at once; the
// caller's own checks after decoding name a field by its path and Doc finds its
// line. A null value (an empty `key:`) leaves the field as it was, so a struct
// filled with defaults before decoding keeps those left out.
//
// Decoded kinds: structs (by `yaml:"name"` tags), pointers, slices,
// map[string]T, string, bool, integers, floats, time.Duration ("30s", "1h";
// "0"), and types that implement encoding.TextUnmarshaler or
// yaml.v3's Unmarshaler (their error is the problem).
package yamlfile

import (
	"bytes"
	"encoding"
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"gopkg.in/yaml.v3"
)

// Error is one problem in a YAML file, with where it is.
type Error struct {
	File string // the name given to Parse
	Line int    // 1-based; 0 when the problem is the file as a whole
	Path string // the field, e.g. "rules[2].mode"; "" for the document
	Msg  string
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		b.WriteString(":" + strconv.Itoa(e.Line))
	}
	b.WriteString(": ")
	if e.Path != "" {
		b.WriteString(e.Path + ": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// MaxErrors bounds the problems a Doc keeps: past it, a file is wrong
// throughout and more would only bury the first.
const MaxErrors = 20

// maxDepth bounds nesting (and alias chains).
const maxDepth = 400

// Doc is one parsed YAML document and the problems found in it so far.
type Doc struct {
	File string
	root *yaml.Node // nil: an empty document
	errs []error
	// aliases counts the aliases Decode followed, bounded by maxAliases
	// (nested aliases multiply: a "billion laughs" document).
	aliases int
}

// maxAliases bounds the aliases one Decode follows.
const maxAliases = 1000

// Parse reads one YAML document of at most maxBytes. An empty input is an
// empty document (Empty); two documents, bytes YAML refuses or a larger input
// are an *Error.
func Parse(file string, data []byte, maxBytes int) (d *Doc, err error) {
	if len(data) > maxBytes {
		return nil, &Error{File: file, Msg: fmt.Sprintf("file is %d bytes, more than the %d allowed", len(data), maxBytes)}
	}
	defer func() {
		// yaml.v3 has panicked on malformed input before (CVE-2022-28948): a
		// bad file must never take the process down.
		if p := recover(); p != nil {
			d, err = nil, &Error{File: file, Msg: fmt.Sprintf("invalid YAML: %v", p)}
		}
	}()
	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return &Doc{File: file}, nil
		}
		return nil, &Error{File: file, Line: errLine(data, err), Msg: "invalid YAML: " + stripLine(err.Error())}
	}
	var extra yaml.Node
	switch err := dec.Decode(&extra); {
	case errors.Is(err, io.EOF):
	case err != nil:
		return nil, &Error{File: file, Line: errLine(data, err), Msg: "invalid YAML: " + stripLine(err.Error())}
	default:
		line := extra.Line
		if line == 0 && len(extra.Content) > 0 {
			line = extra.Content[0].Line
		}
		return nil, &Error{File: file, Line: line, Msg: "more than one YAML document; the file is one"}
	}
	root := &doc
	if root.Kind == yaml.DocumentNode && len(root.Content) == 1 {
		root = root.Content[0]
	}
	return &Doc{File: file, root: root}, nil
}

// Empty reports whether the document has no content.
func (d *Doc) Empty() bool { return d.root == nil }

// Root is the document's top node (nil when empty), for callers that look at
// its shape before decoding.
func (d *Doc) Root() *yaml.Node { return d.root }

// Decode fills v (a pointer) from the document and returns Err. Every problem
// is recorded; a field with a problem keeps the value it had.
func (d *Doc) Decode(v any) error {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		panic("yamlfile: Decode needs a non-nil pointer")
	}
	if d.root != nil {
		d.decode(d.root, rv.Elem(), "", 0)
	}
	return d.Err()
}

// Errorf records a problem of the field at path ("a.b[2].c"; "" for the
// document) at the line of its value, or of its closest enclosing field that
// the document has (a missing field is reported where it should be).
func (d *Doc) Errorf(path, format string, args ...any) {
	d.add(d.Line(path), path, fmt.Sprintf(format, args...))
}

func (d *Doc) add(line int, path, msg string) {
	if len(d.errs) < MaxErrors {
		d.errs = append(d.errs, &Error{File: d.File, Line: line, Path: path, Msg: msg})
	}
}

// Len is how many problems are recorded.
func (d *Doc) Len() int { return len(d.errs) }

// Err is every problem recorded (errors.Join of *Error), or nil.
func (d *Doc) Err() error { return errors.Join(d.errs...) }

// Line is the line of the value at path, or of its closest enclosing field
// the document has; 0 for an empty document.
func (d *Doc) Line(path string) int {
	n := d.lookup(path)
	if n == nil {
		return 0
	}
	return n.Line
}

// Value is the text of the scalar at path as written ("" when there is none).
func (d *Doc) Value(path string) string {
	n := d.lookup(path)
	if n == nil || n.Kind != yaml.ScalarNode || !d.exact(path) {
		return ""
	}
	return n.Value
}

func (d *Doc) exact(path string) bool {
	_, ok := d.find(path)
	return ok
}

func (d *Doc) lookup(path string) *yaml.Node {
	n, _ := d.find(path)
	return n
}

// find walks path from the root; it returns the deepest node reached and
// whether that is the whole path.
func (d *Doc) find(path string) (*yaml.Node, bool) {
	n := d.root
	if n == nil {
		return nil, false
	}
	for _, seg := range splitPath(path) {
		n = deref(n)
		next := child(n, seg)
		if next == nil {
			return n, false
		}
		n = next
	}
	return deref(n), true
}

func deref(n *yaml.Node) *yaml.Node {
	for i := 0; i < maxDepth && n.Kind == yaml.AliasNode && n.Alias != nil; i++ {
		n = n.Alias
	}
	return n
}

// segment is one step of a path: a key, or an index when key is "".
type segment struct {
	key   string
	index int
}

func splitPath(path string) []segment {
	var out []segment
	for _, part := range strings.Split(path, ".") {
		if part == "" {
			continue
		}
		key, rest, _ := strings.Cut(part, "[")
		if key != "" {
			out = append(out, segment{key: key})
		}
		for rest != "" {
			num, after, _ := strings.Cut(rest, "]")
			i, err := strconv.Atoi(num)
			if err != nil {
				return out
			}
			out = append(out, segment{index: i})
			rest = strings.TrimPrefix(after, "[")
		}
	}
	return out
}

func child(n *yaml.Node, s segment) *yaml.Node {
	switch {
	case s.key != "" && n.Kind == yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == s.key {
				return n.Content[i+1]
			}
		}
	case s.key == "" && n.Kind == yaml.SequenceNode && s.index >= 0 && s.index < len(n.Content):
		return n.Content[s.index]
	}
	return nil
}

var (
	durationType    = reflect.TypeFor[time.Duration]()
	textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()
	yamlUnmarshaler = reflect.TypeFor[yaml.Unmarshaler]()
)

func isNull(n *yaml.Node) bool { return n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null" }

func (d *Doc) fail(n *yaml.Node, path, format string, args ...any) {
	d.add(n.Line, path, fmt.Sprintf(format, args...))
}

func (d *Doc) decode(n *yaml.Node, v reflect.Value, path string, depth int) {
	if depth > maxDepth {
		d.fail(n, path, "nested deeper than %d levels", maxDepth)
		return
	}
	if n.Kind == yaml.AliasNode {
		if n.Alias == nil {
			d.fail(n, path, "unknown alias")
			return
		}
		if d.aliases++; d.aliases > maxAliases {
			if d.aliases == maxAliases+1 {
				d.fail(n, path, "more than %d aliases to follow", maxAliases)
			}
			return
		}
		d.decode(n.Alias, v, path, depth+1)
		return
	}
	if isNull(n) {
		return
	}
	t := v.Type()
	if t.Kind() == reflect.Pointer {
		nv := reflect.New(t.Elem())
		if !v.IsNil() {
			nv.Elem().Set(v.Elem())
		}
		before := len(d.errs)
		d.decode(n, nv.Elem(), path, depth+1)
		if len(d.errs) == before {
			v.Set(nv)
		}
		return
	}
	pt := reflect.PointerTo(t)
	switch {
	case pt.Implements(yamlUnmarshaler):
		nv := reflect.New(t)
		if err := nv.Interface().(yaml.Unmarshaler).UnmarshalYAML(n); err != nil {
			d.fail(n, path, "%s", stripLine(err.Error()))
			return
		}
		v.Set(nv.Elem())
		return
	case pt.Implements(textUnmarshaler):
		s, ok := d.scalar(n, path)
		if !ok {
			return
		}
		nv := reflect.New(t)
		if err := nv.Interface().(encoding.TextUnmarshaler).UnmarshalText([]byte(s)); err != nil {
			d.fail(n, path, "%v", err)
			return
		}
		v.Set(nv.Elem())
		return
	case t == durationType:
		s, ok := d.scalar(n, path)
		if !ok {
			return
		}
		dur, err := time.ParseDuration(s)
		if err != nil {
			d.fail(n, path, "%q is not a duration (write e.g. 30s, 10m, 1h)", s)
			return
		}
		v.SetInt(int64(dur))
		return
	}
	switch t.Kind() {
	case reflect.Struct:
		d.decodeStruct(n, v, path, depth)
	case reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			d.fail(n, path, "want a list, got %s", kindOf(n))
			return
		}
		out := reflect.MakeSlice(t, len(n.Content), len(n.Content))
		before := len(d.errs)
		for i, item := range n.Content {
			d.decode(item, out.Index(i), fmt.Sprintf("%s[%d]", path, i), depth+1)
		}
		if len(d.errs) == before {
			v.Set(out)
		}
	case reflect.Map:
		if t.Key().Kind() != reflect.String {
			panic("yamlfile: map keys must be strings: " + t.String())
		}
		if n.Kind != yaml.MappingNode {
			d.fail(n, path, "want a mapping, got %s", kindOf(n))
			return
		}
		out := reflect.MakeMapWithSize(t, len(n.Content)/2)
		d.pairs(n, path, nil, func(key string, val *yaml.Node) {
			ev := reflect.New(t.Elem()).Elem()
			d.decode(val, ev, joinPath(path, key), depth+1)
			out.SetMapIndex(reflect.ValueOf(key).Convert(t.Key()), ev)
		})
		v.Set(out)
	case reflect.String:
		if s, ok := d.scalar(n, path); ok {
			v.SetString(s)
		}
	case reflect.Bool:
		s, ok := d.scalar(n, path)
		if !ok {
			return
		}
		switch s {
		case "true", "True", "TRUE":
			v.SetBool(true)
		case "false", "False", "FALSE":
			v.SetBool(false)
		default:
			d.fail(n, path, "%q is not true or false", s)
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		s, ok := d.scalar(n, path)
		if !ok {
			return
		}
		i, err := strconv.ParseInt(strings.ReplaceAll(s, "_", ""), 10, 64)
		if err != nil || v.OverflowInt(i) {
			d.fail(n, path, "%q is not a whole number", s)
			return
		}
		v.SetInt(i)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		s, ok := d.scalar(n, path)
		if !ok {
			return
		}
		i, err := strconv.ParseUint(strings.ReplaceAll(s, "_", ""), 10, 64)
		if err != nil || v.OverflowUint(i) {
			d.fail(n, path, "%q is not a whole number of at least 0", s)
			return
		}
		v.SetUint(i)
	case reflect.Float32, reflect.Float64:
		s, ok := d.scalar(n, path)
		if !ok {
			return
		}
		f, err := strconv.ParseFloat(s, 64)
		if err != nil || math.IsNaN(f) || math.IsInf(f, 0) || v.OverflowFloat(f) {
			d.fail(n, path, "%q is not a number", s)
			return
		}
		v.SetFloat(f)
	default:
		panic("yamlfile: cannot decode into " + t.String())
	}
}

func (d *Doc) scalar(n *yaml.Node, path string) (string, bool) {
	if n.Kind != yaml.ScalarNode {
		d.fail(n, path, "want a single value, got %s", kindOf(n))
		return "", false
	}
	return n.Value, true
}

// fieldNames lists a struct's YAML keys in declaration order, with the field
// index of each.
func fieldNames(t reflect.Type) ([]string, map[string]int) {
	var names []string
	idx := map[string]int{}
	for i := range t.NumField() {
		f := t.Field(i)
		tag, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if tag == "" || tag == "-" || !f.IsExported() {
			continue
		}
		names = append(names, tag)
		idx[tag] = i
	}
	return names, idx
}

func (d *Doc) decodeStruct(n *yaml.Node, v reflect.Value, path string, depth int) {
	names, idx := fieldNames(v.Type())
	if n.Kind != yaml.MappingNode {
		d.fail(n, path, "want a mapping with keys %s, got %s", strings.Join(names, ", "), kindOf(n))
		return
	}
	d.pairs(n, path, names, func(key string, val *yaml.Node) {
		d.decode(val, v.Field(idx[key]), joinPath(path, key), depth+1)
	})
}

// pairs calls f with each key and value of a mapping, reporting keys that are
// not plain, not in allowed (when given) or given twice.
func (d *Doc) pairs(n *yaml.Node, path string, allowed []string, f func(key string, val *yaml.Node)) {
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, val := n.Content[i], n.Content[i+1]
		key := k.Value
		sub := joinPath(path, key)
		switch {
		case k.Kind != yaml.ScalarNode:
			d.fail(k, path, "a key must be a plain name")
		case allowed != nil && !contains(allowed, key):
			d.fail(k, sub, "unknown field%s (want one of %s)", suggest(key, allowed), strings.Join(allowed, ", "))
		case seen[key]:
			d.fail(k, sub, "given twice")
		default:
			seen[key] = true
			f(key, val)
		}
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func joinPath(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func kindOf(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.AliasNode:
		return "an alias"
	case yaml.ScalarNode:
		return fmt.Sprintf("%q", n.Value)
	}
	return "nothing"
}

// suggest proposes the field a misspelt key was probably meant to be.
func suggest(name string, fields []string) string {
	best, bestD := "", 3
	for _, f := range fields {
		if d := editDistance(strings.ToLower(name), f); d < bestD {
			best, bestD = f, d
		}
	}
	if best == "" {
		return ""
	}
	return fmt.Sprintf(", did you mean %q?", best)
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// errLine finds the line of a yaml.v3 parse error: the "line N" it gives; for
// a byte its reader refuses (a control character, bad UTF-8), the line of the
// first such byte; for an unknown anchor, the line of its first use. yaml.v3
// leaves the line out of a syntax error exactly when the problem is on the
// first line (its marks count from 0, and 0 means "none"), so such an error is
// on line 1. Errors about the document as a whole (aliasing) have no line (0).
func errLine(data []byte, err error) int {
	s := err.Error()
	if i := strings.Index(s, "line "); i >= 0 {
		j := i + len("line ")
		k := j
		for k < len(s) && s[k] >= '0' && s[k] <= '9' {
			k++
		}
		if n, err := strconv.Atoi(s[j:k]); err == nil && n > 0 {
			return n
		}
	}
	lineAt := func(off int) int { return 1 + bytes.Count(data[:off], []byte("\n")) }
	switch {
	case strings.Contains(s, "control characters") || strings.Contains(s, "UTF-8") || strings.Contains(s, "UTF-16"):
		for off := 0; off < len(data); {
			r, size := utf8.DecodeRune(data[off:])
			if (r == utf8.RuneError && size <= 1) || !printable(r) {
				return lineAt(off)
			}
			off += size
		}
		return 0
	case strings.Contains(s, "unknown anchor '"):
		name := s[strings.Index(s, "unknown anchor '")+len("unknown anchor '"):]
		name, _, _ = strings.Cut(name, "'")
		if off := bytes.Index(data, []byte("*"+name)); off >= 0 {
			return lineAt(off)
		}
		return 0
	case strings.Contains(s, "aliasing") || strings.Contains(s, "contains itself") || strings.Contains(s, "past the end"):
		return 0
	}
	return 1
}

// printable is the YAML 1.2 printable set (and the byte-order mark, which
// yaml.v3 skips).
func printable(r rune) bool {
	return r == '\t' || r == '\n' || r == '\r' || (r >= 0x20 && r <= 0x7e) || r == 0x85 ||
		(r >= 0xa0 && r <= 0xd7ff) || (r >= 0xe000 && r <= 0xfffd) || (r >= 0x10000 && r <= 0x10ffff)
}

// stripLine drops yaml.v3's "yaml: " and "line N: " so the line is said once.
func stripLine(s string) string {
	s = strings.TrimPrefix(s, "yaml: ")
	if strings.HasPrefix(s, "line ") {
		if i := strings.Index(s, ": "); i >= 0 {
			return s[i+2:]
		}
	}
	return s
}
