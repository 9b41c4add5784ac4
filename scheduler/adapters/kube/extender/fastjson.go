package extender

import (
	"encoding/json"
	"io"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	v1 "k8s.io/api/core/v1"
	extenderv1 "k8s.io/kube-scheduler/extender/v1"
)

// decodeArgsFast decodes the nodeCacheCapable form of ExtenderArgs, which is
// what kube-scheduler sends on every scheduling cycle: an object with Pod,
// NodeNames and a null Nodes, keys matched as encoding/json matches them
// (case-insensitively). The node names are substrings of one copy of data (one
// allocation instead of one per name); the pod goes through encoding/json.
//
// ok is false for anything outside that plain form: invalid JSON, Node
// objects, a key that is escaped, not ASCII or repeated, a name with an
// escape or a control character, a top level that is not an object. The caller
// then decodes data with encoding/json, whose answer (or error) is
// authoritative; where ok is true the answer equals encoding/json's.
//
// The names are appended to names[:0] (a pooled buffer).
func decodeArgsFast(data []byte, names []string) (args extenderv1.ExtenderArgs, ok bool) {
	sc := scanner{s: string(data)}
	sc.ws()
	if !sc.eat('{') {
		return args, false
	}
	sc.ws()
	if sc.eat('}') {
		return args, sc.end()
	}
	var seenPod, seenNodes, seenNames bool
	for {
		key, ok := sc.plainString()
		if !ok {
			return args, false
		}
		sc.ws()
		if !sc.eat(':') {
			return args, false
		}
		sc.ws()
		switch {
		case strings.EqualFold(key, "Pod"):
			if seenPod {
				return args, false
			}
			seenPod = true
			start := sc.i
			if !sc.skip() {
				return args, false
			}
			var pod *v1.Pod
			if err := json.Unmarshal(data[start:sc.i], &pod); err != nil {
				return args, false
			}
			args.Pod = pod
		case strings.EqualFold(key, "Nodes"):
			// The Node-object form takes the general path; only null is plain.
			if seenNodes || !sc.literal("null") {
				return args, false
			}
			seenNodes = true
		case strings.EqualFold(key, "NodeNames"):
			if seenNames {
				return args, false
			}
			seenNames = true
			if sc.literal("null") {
				break
			}
			names, ok = sc.names(names[:0])
			if !ok {
				return args, false
			}
			args.NodeNames = &names
		default: // encoding/json ignores unknown keys, but not invalid values
			start := sc.i
			if !sc.skip() || !json.Valid(data[start:sc.i]) {
				return args, false
			}
		}
		sc.ws()
		if sc.eat('}') {
			return args, sc.end()
		}
		if !sc.eat(',') {
			return args, false
		}
		sc.ws()
	}
}

// scanner reads JSON from s at i. Its methods report false for anything
// outside the plain form decodeArgsFast handles.
type scanner struct {
	s string
	i int
}

func (sc *scanner) ws() {
	for sc.i < len(sc.s) {
		switch sc.s[sc.i] {
		case ' ', '\t', '\n', '\r':
			sc.i++
		default:
			return
		}
	}
}

func (sc *scanner) eat(c byte) bool {
	if sc.i < len(sc.s) && sc.s[sc.i] == c {
		sc.i++
		return true
	}
	return false
}

// end reports whether only white space is left.
func (sc *scanner) end() bool {
	sc.ws()
	return sc.i == len(sc.s)
}

// literal consumes word (null) when it is a whole token.
func (sc *scanner) literal(word string) bool {
	if !strings.HasPrefix(sc.s[sc.i:], word) {
		return false
	}
	if j := sc.i + len(word); j < len(sc.s) && !delimiter(sc.s[j]) {
		return false
	}
	sc.i += len(word)
	return true
}

func delimiter(c byte) bool {
	switch c {
	case ' ', '\t', '\n', '\r', ',', ']', '}', ':':
		return true
	}
	return false
}

// plainString reads a string without escapes or control characters whose
// bytes are valid UTF-8: its JSON value is its bytes.
func (sc *scanner) plainString() (string, bool) {
	if !sc.eat('"') {
		return "", false
	}
	start := sc.i
	ascii := true
	for ; sc.i < len(sc.s); sc.i++ {
		c := sc.s[sc.i]
		switch {
		case c == '"':
			v := sc.s[start:sc.i]
			sc.i++
			if !ascii && !utf8.ValidString(v) {
				return "", false // encoding/json would replace bad bytes with U+FFFD
			}
			return v, true
		case c == '\\' || c < 0x20:
			return "", false
		case c >= utf8.RuneSelf:
			ascii = false
		}
	}
	return "", false
}

// names appends an array of plain strings to out; it is not nil when ok.
func (sc *scanner) names(out []string) ([]string, bool) {
	if !sc.eat('[') {
		return nil, false
	}
	if out == nil {
		rest := sc.s[sc.i:]
		if end := strings.IndexByte(rest, ']'); end >= 0 {
			rest = rest[:end] // a capacity estimate: a name may hold a comma
		}
		out = make([]string, 0, strings.Count(rest, ",")+1)
	}
	sc.ws()
	if sc.eat(']') {
		return out, true
	}
	for {
		name, ok := sc.plainString()
		if !ok {
			return nil, false
		}
		out = append(out, name)
		sc.ws()
		if sc.eat(']') {
			return out, true
		}
		if !sc.eat(',') {
			return nil, false
		}
		sc.ws()
	}
}

// skip moves past one value, following strings and brackets only: the caller
// checks the value it spans with encoding/json.
func (sc *scanner) skip() bool {
	depth := 0
	start := sc.i
	for sc.i < len(sc.s) {
		c := sc.s[sc.i]
		switch c {
		case '"':
			sc.i++
			for sc.i < len(sc.s) && sc.s[sc.i] != '"' {
				if sc.s[sc.i] == '\\' {
					sc.i++
				}
				sc.i++
			}
			if sc.i >= len(sc.s) {
				return false
			}
			sc.i++
		case '{', '[':
			depth++
			sc.i++
		case '}', ']':
			if depth == 0 {
				return sc.i > start
			}
			depth--
			sc.i++
		default:
			if depth == 0 && delimiter(c) {
				return sc.i > start
			}
			sc.i++
		}
		if depth == 0 && (c == '"' || c == '}' || c == ']') {
			return true
		}
	}
	return depth == 0 && sc.i > start
}

// appendString appends s as encoding/json writes it (HTML-escaped, invalid
// UTF-8 replaced); the common plain name is copied as it is.
func appendString(dst []byte, s string) []byte {
	if plain(s) {
		dst = append(dst, '"')
		dst = append(dst, s...)
		return append(dst, '"')
	}
	b, _ := json.Marshal(s) // a string always marshals
	return append(dst, b...)
}

// plain reports whether encoding/json writes s between quotes as it is.
func plain(s string) bool {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c < 0x20, c >= utf8.RuneSelf, c == '"', c == '\\', c == '<', c == '>', c == '&':
			return false
		}
	}
	return true
}

// appendMessage appends the failure message of s ("gpuwatch plugin: reason").
func appendMessage(dst []byte, plugin, reason string) []byte {
	if plain(plugin) && plain(reason) {
		dst = append(dst, `"gpuwatch `...)
		dst = append(dst, plugin...)
		dst = append(dst, ": "...)
		dst = append(dst, reason...)
		return append(dst, '"')
	}
	return appendString(dst, failureMessage(plugin, reason))
}

func failureMessage(plugin, reason string) string { return "gpuwatch " + plugin + ": " + reason }

// appendFilterResult appends the ExtenderFilterResult of v in the names form,
// byte for byte what encoding/json's Encoder writes (map keys sorted, a
// trailing newline).
func appendFilterResult(dst []byte, v *verdict) []byte {
	dst = append(dst, `{"Nodes":null,"NodeNames":[`...)
	var failed, unresolvable []int // indexes of names that fail
	first := true
	for i, name := range v.names {
		if v.passes(i) {
			if !first {
				dst = append(dst, ',')
			}
			first = false
			dst = appendString(dst, name)
			continue
		}
		if v.scores[i].Plugin == "capacity" {
			failed = append(failed, i)
		} else {
			unresolvable = append(unresolvable, i)
		}
	}
	dst = append(dst, `],"FailedNodes":`...)
	dst = v.appendFailed(dst, failed)
	dst = append(dst, `,"FailedAndUnresolvableNodes":`...)
	dst = v.appendFailed(dst, unresolvable)
	return append(dst, ",\"Error\":\"\"}\n"...)
}

// appendFailed appends a FailedNodesMap of the names at idx: keys sorted, a
// repeated name once with its last message, as a Go map would hold it.
func (v *verdict) appendFailed(dst []byte, idx []int) []byte {
	slices.SortStableFunc(idx, func(a, b int) int { return strings.Compare(v.names[a], v.names[b]) })
	dst = append(dst, '{')
	first := true
	for k, i := range idx {
		if k+1 < len(idx) && v.names[idx[k+1]] == v.names[i] {
			continue
		}
		if !first {
			dst = append(dst, ',')
		}
		first = false
		dst = appendString(dst, v.names[i])
		dst = append(dst, ':')
		dst = appendMessage(dst, v.scores[i].Plugin, v.scores[i].Reason)
	}
	return append(dst, '}')
}

// appendPriorities appends the HostPriorityList of v as encoding/json's
// Encoder writes it.
func appendPriorities(dst []byte, v *verdict) []byte {
	dst = append(dst, '[')
	for i, name := range v.names {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, `{"Host":`...)
		dst = appendString(dst, name)
		dst = append(dst, `,"Score":`...)
		dst = strconv.AppendInt(dst, v.priority(i), 10)
		dst = append(dst, '}')
	}
	return append(dst, "]\n"...)
}

// readAll appends r's bytes to dst, as io.ReadAll does.
func readAll(dst []byte, r io.Reader) ([]byte, error) {
	for {
		if len(dst) == cap(dst) {
			dst = append(dst, 0)[:len(dst)]
		}
		n, err := r.Read(dst[len(dst):cap(dst)])
		dst = dst[:len(dst)+n]
		if err == io.EOF {
			return dst, nil
		}
		if err != nil {
			return dst, err
		}
	}
}
