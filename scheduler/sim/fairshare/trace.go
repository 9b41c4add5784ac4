package fairshare

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Trace files
//
// A trace is CSV or JSON; ParseTrace tells them apart by the first
// non-blank byte ('{' is JSON). Times are Go durations ("90m", "1h30m") or
// plain seconds ("5400"), offsets from the trace's start.
//
// CSV: optional directive lines, then a header row naming the columns, then
// one job per row. Columns arrival, duration, gpus, account, user, profile
// are required; name, walltime and step are optional. profile is an activity
// in [0,1] (constant) or several separated by spaces or ';', sampled every
// step (required then). walltime defaults to duration × walltime_factor.
//
//	# cluster: nodes=1 gpus_per_node=2
//	# shares: idle=1 busy=1
//	# walltime_factor: 1
//	# window: 0s 2h
//	arrival,duration,gpus,account,user,profile,step
//	0,1h,1,idle,alice,0.1,
//	0s,3600,1,busy,bob,0.9 0.8 0.95,57s
//
// Other lines starting with '#' are comments. Accounts without a shares
// directive get 1 share each.
//
// JSON: the same as one object.
//
//	{"cluster": {"nodes": 1, "gpus_per_node": 2},
//	 "shares": {"idle": 1, "busy": 1}, "walltime_factor": 1,
//	 "window": {"start": "0s", "end": "2h"},
//	 "jobs": [{"arrival": 0, "duration": "1h", "gpus": 1, "account": "idle",
//	           "user": "alice", "profile": 0.1},
//	          {"arrival": "0s", "duration": 3600, "gpus": 1, "account": "busy",
//	           "user": "bob", "profile": {"values": [0.9, 0.8], "step": "57s"}}]}

// Limits that keep a hostile trace from exhausting memory.
const (
	maxTraceGPUs      = 1 << 20
	maxTraceTime      = 100 * 365 * 24 * time.Hour
	maxProfileValues  = 1 << 20
	maxWalltimeFactor = 1000
)

// TraceEpoch is the wall-clock time of a trace's offset 0 (ledger samples
// carry it; nothing else depends on it).
var TraceEpoch = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

// LoadTrace reads a trace file.
func LoadTrace(path string) (*Workload, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("cannot read trace: %w", err)
	}
	return ParseTrace(filepath.Base(path), data)
}

// ParseTrace parses a CSV or JSON trace; name prefixes error positions
// (name:line).
func ParseTrace(name string, data []byte) (*Workload, error) {
	p := &traceParser{name: name, w: &Workload{Name: name, Start: TraceEpoch, Shares: map[string]int64{}},
		factor: DefaultWalltimeFactor, consts: map[float64]*Profile{}}
	var err error
	if t := bytes.TrimLeft(data, " \t\r\n\ufeff"); len(t) > 0 && t[0] == '{' {
		err = p.json(data)
	} else {
		err = p.csv(data)
	}
	if err != nil {
		return nil, err
	}
	return p.finish()
}

type traceParser struct {
	name      string
	w         *Workload
	factor    float64
	sharesSet bool
	consts    map[float64]*Profile
	// walltimes given explicitly (else duration × factor at the end)
	explicit []bool
	lines    []int
}

func (p *traceParser) errf(line int, format string, args ...any) error {
	return fmt.Errorf("%s:%d: %s", p.name, line, fmt.Sprintf(format, args...))
}

// parseTime reads a Go duration or plain seconds.
func parseTime(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, errors.New("empty time")
	}
	var d time.Duration
	if f, err := strconv.ParseFloat(s, 64); err == nil {
		if math.IsNaN(f) || f < 0 || f > maxTraceTime.Seconds() {
			return 0, fmt.Errorf("time %q: want seconds in [0, %v]", s, maxTraceTime.Seconds())
		}
		d = time.Duration(math.Round(f * 1e9))
	} else {
		d, err = time.ParseDuration(s)
		if err != nil {
			return 0, fmt.Errorf("time %q: want a duration like 90m or seconds", s)
		}
	}
	if d < 0 || d > maxTraceTime {
		return 0, fmt.Errorf("time %q: want a value in [0, %v]", s, maxTraceTime)
	}
	return d, nil
}

func validName(what, n string) error {
	if n == "" {
		return fmt.Errorf("%s is empty", what)
	}
	if len(n) > 256 {
		return fmt.Errorf("%s %.20q… is longer than 256 bytes", what, n)
	}
	for _, r := range n {
		if r == '/' || r <= ' ' || r == 0x7f || r == '\ufffd' {
			return fmt.Errorf("%s %q contains %q: names may not contain whitespace, control characters or '/'", what, n, r)
		}
	}
	return nil
}

func (p *traceParser) constant(a float64) (*Profile, error) {
	if c, ok := p.consts[a]; ok {
		return c, nil
	}
	c, err := ConstantProfile(a)
	if err != nil {
		return nil, err
	}
	p.consts[a] = c
	return c, nil
}

// rawJob is one job before checks; times as text.
type rawJob struct {
	name, arrival, duration, walltime, account, user string
	gpus                                             int
	values                                           []float64
	step                                             string
}

func (p *traceParser) addJob(line int, r rawJob) error {
	arr, err := parseTime(r.arrival)
	if err != nil {
		return p.errf(line, "arrival: %v", err)
	}
	dur, err := parseTime(r.duration)
	if err != nil {
		return p.errf(line, "duration: %v", err)
	}
	if dur <= 0 {
		return p.errf(line, "duration %q: a job must run for some time", r.duration)
	}
	if r.gpus <= 0 || r.gpus > maxTraceGPUs {
		return p.errf(line, "gpus %d: want 1..%d", r.gpus, maxTraceGPUs)
	}
	if err := validName("account", r.account); err != nil {
		return p.errf(line, "%v", err)
	}
	if err := validName("user", r.user); err != nil {
		return p.errf(line, "%v", err)
	}
	j := Job{ID: len(p.w.Jobs), Name: r.name, Arrival: arr, Duration: dur, GPUs: r.gpus, Account: r.account, User: r.user}
	if j.Name == "" {
		j.Name = fmt.Sprintf("%s:%d", p.name, line)
	}
	explicit := false
	if r.walltime != "" {
		wt, err := parseTime(r.walltime)
		if err != nil {
			return p.errf(line, "walltime: %v", err)
		}
		if wt < dur {
			return p.errf(line, "walltime %v is shorter than the duration %v: the job would be killed before it ends", wt, dur)
		}
		j.Walltime, explicit = wt, true
	}
	switch {
	case len(r.values) == 0:
		return p.errf(line, "profile is empty: want an activity in [0,1] or a list of them")
	case len(r.values) > maxProfileValues:
		return p.errf(line, "profile has %d values, more than %d", len(r.values), maxProfileValues)
	case len(r.values) == 1 && r.step == "":
		j.Profile, err = p.constant(r.values[0])
	default:
		if r.step == "" {
			return p.errf(line, "profile has %d values but no step: say how far apart they are (e.g. 57s)", len(r.values))
		}
		step, err2 := parseTime(r.step)
		if err2 != nil {
			return p.errf(line, "step: %v", err2)
		}
		if step < time.Millisecond {
			return p.errf(line, "step %v: want at least 1ms", step)
		}
		j.Profile, err = NewProfile(j.Name, step, r.values)
	}
	if err != nil {
		return p.errf(line, "%v", err)
	}
	if _, ok := p.w.Shares[j.Account]; !ok && !p.sharesSet {
		p.w.Shares[j.Account] = 1
	}
	p.w.Jobs = append(p.w.Jobs, j)
	p.explicit = append(p.explicit, explicit)
	p.lines = append(p.lines, line)
	return nil
}

func parseValues(s string) ([]float64, error) {
	fields := strings.FieldsFunc(s, func(r rune) bool { return r == ';' || r == ' ' || r == '\t' })
	if len(fields) > maxProfileValues {
		return nil, fmt.Errorf("profile has %d values, more than %d", len(fields), maxProfileValues)
	}
	out := make([]float64, 0, len(fields))
	for _, f := range fields {
		v, err := strconv.ParseFloat(f, 64)
		if err != nil || math.IsNaN(v) || v < 0 || v > 1 {
			return nil, fmt.Errorf("profile value %q: want an activity in [0,1]", f)
		}
		out = append(out, v)
	}
	return out, nil
}

func (p *traceParser) finish() (*Workload, error) {
	if len(p.w.Jobs) == 0 {
		return nil, fmt.Errorf("%s: no jobs", p.name)
	}
	for i := range p.w.Jobs {
		j := &p.w.Jobs[i]
		if !p.explicit[i] {
			wt := float64(j.Duration) * p.factor
			if wt > float64(maxTraceTime) {
				return nil, p.errf(p.lines[i], "walltime %v × %g is too long", j.Duration, p.factor)
			}
			j.Walltime = time.Duration(wt)
		}
		if _, ok := p.w.Shares[j.Account]; !ok {
			return nil, p.errf(p.lines[i], "account %q is not in the shares directive", j.Account)
		}
		if p.w.Cluster != (Cluster{}) && j.GPUs > p.w.Cluster.GPUs() {
			return nil, p.errf(p.lines[i], "job asks for %d GPUs, the cluster has %d", j.GPUs, p.w.Cluster.GPUs())
		}
	}
	return p.w, nil
}

// directive handles "# key: value" lines of a CSV trace; other comments are
// ignored.
func (p *traceParser) directive(line int, text string) error {
	body := strings.TrimSpace(strings.TrimPrefix(text, "#"))
	key, val, ok := strings.Cut(body, ":")
	if !ok {
		return nil
	}
	key = strings.TrimSpace(key)
	val = strings.TrimSpace(val)
	kv := func() (map[string]string, error) {
		m := map[string]string{}
		for _, f := range strings.Fields(val) {
			k, v, ok := strings.Cut(f, "=")
			if !ok || k == "" {
				return nil, fmt.Errorf("%q: want key=value", f)
			}
			if _, dup := m[k]; dup {
				return nil, fmt.Errorf("%q given twice", k)
			}
			m[k] = v
		}
		return m, nil
	}
	switch key {
	case "cluster":
		m, err := kv()
		if err != nil {
			return p.errf(line, "cluster directive: %v", err)
		}
		c, err := clusterFrom(m["nodes"], m["gpus_per_node"])
		if err != nil {
			return p.errf(line, "cluster directive: %v", err)
		}
		for k := range m {
			if k != "nodes" && k != "gpus_per_node" {
				return p.errf(line, "cluster directive: unknown key %q (want nodes, gpus_per_node)", k)
			}
		}
		p.w.Cluster = c
	case "shares":
		m, err := kv()
		if err != nil {
			return p.errf(line, "shares directive: %v", err)
		}
		for a, v := range m {
			if err := p.setShares(a, v); err != nil {
				return p.errf(line, "shares directive: %v", err)
			}
		}
	case "walltime_factor":
		f, err := strconv.ParseFloat(val, 64)
		if err != nil || !(f >= 1 && f <= maxWalltimeFactor) {
			return p.errf(line, "walltime_factor %q: want a number in [1, %d]", val, maxWalltimeFactor)
		}
		p.factor = f
	case "window":
		fs := strings.Fields(val)
		if len(fs) != 2 {
			return p.errf(line, "window %q: want start and end, e.g. \"0s 2h\"", val)
		}
		if err := p.setWindow(fs[0], fs[1]); err != nil {
			return p.errf(line, "%v", err)
		}
	}
	return nil
}

func isDirective(k string) bool {
	switch k {
	case "cluster", "shares", "walltime_factor", "window":
		return true
	}
	return false
}

func clusterFrom(nodes, gpn string) (Cluster, error) {
	n, err1 := strconv.Atoi(nodes)
	g, err2 := strconv.Atoi(gpn)
	if err1 != nil || err2 != nil {
		return Cluster{}, fmt.Errorf("nodes %q, gpus_per_node %q: want integers", nodes, gpn)
	}
	c := Cluster{Nodes: n, GPUsPerNode: g}
	return c, c.Validate()
}

func (p *traceParser) setShares(account, v string) error {
	if err := validName("account", account); err != nil {
		return err
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 || n > math.MaxUint32-2 {
		return fmt.Errorf("account %s shares %q: want an integer in [0, %d]", account, v, int64(math.MaxUint32-2))
	}
	if !p.sharesSet {
		p.w.Shares = map[string]int64{}
		p.sharesSet = true
	}
	if _, dup := p.w.Shares[account]; dup {
		return fmt.Errorf("account %s has shares twice", account)
	}
	p.w.Shares[account] = n
	return nil
}

func (p *traceParser) setWindow(start, end string) error {
	s, err := parseTime(start)
	if err != nil {
		return fmt.Errorf("window start: %v", err)
	}
	e, err := parseTime(end)
	if err != nil {
		return fmt.Errorf("window end: %v", err)
	}
	if e <= s {
		return fmt.Errorf("window [%v, %v) is empty", s, e)
	}
	p.w.WindowStart, p.w.WindowEnd = s, e
	return nil
}

var csvColumns = []string{"arrival", "duration", "gpus", "account", "user", "profile", "step", "walltime", "name"}

func (p *traceParser) csv(data []byte) error {
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64<<10), 64<<20)
	line := 0
	var col map[string]int
	for sc.Scan() {
		line++
		text := strings.TrimRight(sc.Text(), "\r")
		if line == 1 {
			text = strings.TrimPrefix(text, "\ufeff")
		}
		if strings.TrimSpace(text) == "" {
			continue
		}
		if strings.HasPrefix(strings.TrimSpace(text), "#") {
			if col != nil {
				body := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(text), "#"))
				if k, _, ok := strings.Cut(body, ":"); ok && isDirective(strings.TrimSpace(k)) {
					return p.errf(line, "directive %q after the header: put directives before the header row", strings.TrimSpace(k))
				}
				continue
			}
			if err := p.directive(line, text); err != nil {
				return err
			}
			continue
		}
		r := csv.NewReader(strings.NewReader(text))
		r.FieldsPerRecord = -1
		rec, err := r.Read()
		if err != nil {
			return p.errf(line, "%v", err)
		}
		if col == nil {
			col = map[string]int{}
			for i, h := range rec {
				h = strings.ToLower(strings.TrimSpace(h))
				known := false
				for _, c := range csvColumns {
					known = known || c == h
				}
				if !known {
					return p.errf(line, "header column %q: want %s", h, strings.Join(csvColumns, ", "))
				}
				if _, dup := col[h]; dup {
					return p.errf(line, "header names column %q twice", h)
				}
				col[h] = i
			}
			for _, c := range csvColumns[:6] {
				if _, ok := col[c]; !ok {
					return p.errf(line, "header has no %q column (required: arrival, duration, gpus, account, user, profile)", c)
				}
			}
			continue
		}
		if len(rec) != len(col) {
			return p.errf(line, "%d fields, the header has %d", len(rec), len(col))
		}
		get := func(c string) string {
			if i, ok := col[c]; ok {
				return strings.TrimSpace(rec[i])
			}
			return ""
		}
		g, err := strconv.Atoi(get("gpus"))
		if err != nil {
			return p.errf(line, "gpus %q: want an integer", get("gpus"))
		}
		vals, err := parseValues(get("profile"))
		if err != nil {
			return p.errf(line, "%v", err)
		}
		if err := p.addJob(line, rawJob{name: get("name"), arrival: get("arrival"), duration: get("duration"), walltime: get("walltime"),
			account: get("account"), user: get("user"), gpus: g, values: vals, step: get("step")}); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		return p.errf(line+1, "%v", err)
	}
	if col == nil {
		return fmt.Errorf("%s: no header row (want arrival,duration,gpus,account,user,profile)", p.name)
	}
	return nil
}

// jsonTime is a duration string or a number of seconds.
type jsonTime string

func (t *jsonTime) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		*t = jsonTime(s)
		return nil
	}
	var f json.Number
	if err := json.Unmarshal(b, &f); err != nil {
		return fmt.Errorf("time %s: want a duration string or seconds", b)
	}
	*t = jsonTime(f.String())
	return nil
}

// jsonProfile is a number or {"values": [...], "step": ...}.
type jsonProfile struct {
	values []float64
	step   string
}

func (p *jsonProfile) UnmarshalJSON(b []byte) error {
	var f float64
	if err := json.Unmarshal(b, &f); err == nil {
		p.values = []float64{f}
		return nil
	}
	var o struct {
		Values []float64 `json:"values"`
		Step   jsonTime  `json:"step"`
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	if err := d.Decode(&o); err != nil {
		return fmt.Errorf("profile: want an activity or {\"values\": [...], \"step\": \"57s\"}: %v", err)
	}
	for _, v := range o.Values {
		if math.IsNaN(v) || v < 0 || v > 1 {
			return fmt.Errorf("profile value %v: want an activity in [0,1]", v)
		}
	}
	p.values, p.step = o.Values, string(o.Step)
	if p.step == "" && len(p.values) == 1 {
		p.step = "1h"
	}
	return nil
}

type jsonJob struct {
	Name     string       `json:"name"`
	Arrival  *jsonTime    `json:"arrival"`
	Duration *jsonTime    `json:"duration"`
	Walltime jsonTime     `json:"walltime"`
	GPUs     int          `json:"gpus"`
	Account  string       `json:"account"`
	User     string       `json:"user"`
	Profile  *jsonProfile `json:"profile"`
}

func lineAt(data []byte, off int64) int {
	off = min(max(off, 0), int64(len(data)))
	return 1 + bytes.Count(data[:off], []byte{'\n'})
}

func (p *traceParser) json(data []byte) error {
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	fail := func(err error) error {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			return p.errf(lineAt(data, se.Offset), "%v", err)
		}
		return p.errf(lineAt(data, d.InputOffset()), "%v", err)
	}
	expect := func(want json.Delim) error {
		t, err := d.Token()
		if err != nil {
			return fail(err)
		}
		if t != want {
			return p.errf(lineAt(data, d.InputOffset()), "want %q, found %v", want, t)
		}
		return nil
	}
	if err := expect('{'); err != nil {
		return err
	}
	seen := map[string]bool{}
	for d.More() {
		t, err := d.Token()
		if err != nil {
			return fail(err)
		}
		key, _ := t.(string)
		line := lineAt(data, d.InputOffset())
		if seen[key] {
			return p.errf(line, "key %q given twice", key)
		}
		seen[key] = true
		switch key {
		case "cluster":
			var c struct {
				Nodes       int `json:"nodes"`
				GPUsPerNode int `json:"gpus_per_node"`
			}
			if err := decodeStrict(d, &c); err != nil {
				return p.errf(line, "cluster: %v", err)
			}
			cl := Cluster(c)
			if err := cl.Validate(); err != nil {
				return p.errf(line, "cluster: %v", err)
			}
			p.w.Cluster = cl
		case "shares":
			var m map[string]json.Number
			if err := d.Decode(&m); err != nil {
				return p.errf(line, "shares: want {\"account\": shares, ...}: %v", err)
			}
			for a, v := range m {
				if err := p.setShares(a, v.String()); err != nil {
					return p.errf(line, "shares: %v", err)
				}
			}
			if !p.sharesSet {
				return p.errf(line, "shares: empty")
			}
		case "walltime_factor":
			var f float64
			if err := d.Decode(&f); err != nil || !(f >= 1 && f <= maxWalltimeFactor) {
				return p.errf(line, "walltime_factor: want a number in [1, %d]", maxWalltimeFactor)
			}
			p.factor = f
		case "window":
			var win struct {
				Start jsonTime `json:"start"`
				End   jsonTime `json:"end"`
			}
			if err := decodeStrict(d, &win); err != nil {
				return p.errf(line, "window: %v", err)
			}
			if err := p.setWindow(string(win.Start), string(win.End)); err != nil {
				return p.errf(line, "%v", err)
			}
		case "jobs":
			if err := expect('['); err != nil {
				return err
			}
			for d.More() {
				line := lineAt(data, d.InputOffset())
				// InputOffset is before the separator and whitespace; move
				// to the object's own line.
				if rest := data[min(d.InputOffset(), int64(len(data))):]; len(rest) > 0 {
					i := bytes.IndexByte(rest, '{')
					if i >= 0 {
						line = lineAt(data, d.InputOffset()+int64(i))
					}
				}
				var j jsonJob
				if err := decodeStrict(d, &j); err != nil {
					return p.errf(line, "job: %v", err)
				}
				if j.Arrival == nil || j.Duration == nil || j.Profile == nil {
					return p.errf(line, "job: arrival, duration and profile are required")
				}
				if err := p.addJob(line, rawJob{name: j.Name, arrival: string(*j.Arrival), duration: string(*j.Duration), walltime: string(j.Walltime),
					account: j.Account, user: j.User, gpus: j.GPUs, values: j.Profile.values, step: j.Profile.step}); err != nil {
					return err
				}
			}
			if err := expect(']'); err != nil {
				return err
			}
		default:
			return p.errf(line, "unknown key %q (want cluster, shares, walltime_factor, window, jobs)", key)
		}
	}
	if err := expect('}'); err != nil {
		return err
	}
	if _, err := d.Token(); !errors.Is(err, io.EOF) {
		return p.errf(lineAt(data, d.InputOffset()), "data after the trace object")
	}
	return nil
}

func decodeStrict(d *json.Decoder, v any) error {
	var raw json.RawMessage
	if err := d.Decode(&raw); err != nil {
		return err
	}
	dd := json.NewDecoder(bytes.NewReader(raw))
	dd.DisallowUnknownFields()
	if err := dd.Decode(v); err != nil {
		return err
	}
	return nil
}
