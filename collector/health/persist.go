package health

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/gpuwatch/gpuwatch/internal/atomicfile"
	"github.com/gpuwatch/gpuwatch/telemetry"
	"github.com/gpuwatch/gpuwatch/telemetry/healthreport"
)

// StateVersion is the version of the state file layout this package writes and
// reads. A file with another version is set aside and replaced.
const StateVersion = 1

// maxStateFile bounds the state file the engine reads (a node's file is a few
// hundred KiB at most).
const maxStateFile = 64 << 20

// stateFile is the persisted engine state.
type stateFile struct {
	Version      int                       `json:"version"`
	Node         string                    `json:"node"`
	BootID       string                    `json:"boot_id,omitempty"`
	Saved        time.Time                 `json:"saved"`
	ExpectedGPUs int                       `json:"expected_gpus,omitempty"`
	Counters     map[string]savedCounter   `json:"counters"`
	Gauges       map[string]float64        `json:"gauges"`
	Conditions   []savedCondition          `json:"conditions"`
	NodeState    savedTrack                `json:"node_state"`
	GPUs         map[string]savedGPU       `json:"gpus"`
	Flaps        map[string][]time.Time    `json:"ib_flaps,omitempty"`
	Raised       map[string]map[string]int `json:"raised,omitempty"` // condition → severity → count
	// SXidClearedAt: SXids logged before it are history (nvswitch-fatal cleared).
	SXidClearedAt time.Time `json:"sxid_cleared_at,omitzero"`
}

type savedCounter struct {
	Base float64   `json:"base"`
	Last float64   `json:"last"`
	At   time.Time `json:"at"`
}

type savedCondition struct {
	telemetry.Condition
	Policy  string    `json:"policy"`
	LastBad time.Time `json:"last_bad"`
	Good    int       `json:"good,omitempty"`
}

type savedTrack struct {
	State          telemetry.State `json:"state"`
	Since          time.Time       `json:"since,omitzero"`
	ProbationSince time.Time       `json:"probation_since,omitzero"`
}

type savedGPU struct {
	savedTrack
	Xids         []incident         `json:"xids,omitempty"`
	Override     telemetry.Action   `json:"override,omitempty"`
	OverrideAt   time.Time          `json:"override_at,omitzero"`
	OverrideText string             `json:"override_text,omitempty"`
	XidMax       telemetry.Action   `json:"xid_max,omitempty"`
	XidSevMax    telemetry.Severity `json:"xid_severity_max,omitempty"`
	ResetAt      time.Time          `json:"reset_at,omitzero"`
	LastKmsg     time.Time          `json:"last_kmsg,omitzero"`
	DBE          *dbeEvent          `json:"dbe,omitempty"`
	Gone         bool               `json:"gone,omitempty"`
	Known        bool               `json:"known,omitempty"`
}

// decodeState parses and checks a state file. An error means the file as a whole is
// unusable; problems with single entries drop those entries and come back as
// warnings.
func decodeState(data []byte, node telemetry.NodeID) (*stateFile, []string, error) {
	var sf stateFile
	if err := json.Unmarshal(data, &sf); err != nil {
		return nil, nil, fmt.Errorf("not a gpuwatch health state file: %w", err)
	}
	if sf.Version != StateVersion {
		return nil, nil, fmt.Errorf("state file version %d, this agent reads version %d", sf.Version, StateVersion)
	}
	if sf.Node != string(node) {
		return nil, nil, fmt.Errorf("state file is for node %q, this is %q", sf.Node, node)
	}
	var warns []string
	drop := func(format string, args ...any) { warns = append(warns, fmt.Sprintf(format, args...)) }
	finite := func(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }
	for k, c := range sf.Counters {
		if _, err := parseSeriesKey(k); err != nil || !finite(c.Base) || !finite(c.Last) || c.Last < c.Base {
			drop("state file: counter %q dropped: bad key or values", k)
			delete(sf.Counters, k)
		}
	}
	for k, v := range sf.Gauges {
		if _, err := parseSeriesKey(k); err != nil || !finite(v) {
			drop("state file: gauge %q dropped: bad key or value", k)
			delete(sf.Gauges, k)
		}
	}
	conds := sf.Conditions[:0]
	for _, c := range sf.Conditions {
		_, perr := parsePolicy(c.Policy)
		switch err := c.Condition.Validate(); {
		case err != nil:
			drop("state file: condition dropped: %v", err)
		case perr != nil:
			drop("state file: condition %s dropped: %v", c.Key(), perr)
		case c.Target.Node != node:
			drop("state file: condition %s dropped: not on node %s", c.Key(), node)
		case c.Good < 0:
			drop("state file: condition %s dropped: negative good count", c.Key())
		default:
			conds = append(conds, c)
		}
	}
	sf.Conditions = conds
	if !sf.NodeState.State.Valid() {
		drop("state file: node state %d invalid, healthy assumed", int(sf.NodeState.State))
		sf.NodeState = savedTrack{}
	}
	for k, g := range sf.GPUs {
		i, err := strconv.Atoi(k)
		if err != nil || i < -1 || i > maxGPUIndex || !g.State.Valid() || !g.XidSevMax.Valid() ||
			!g.Override.Known() || !g.XidMax.Known() || len(g.Xids) > maxIncidents {
			drop("state file: GPU %q dropped: bad index, state or Xid history", k)
			delete(sf.GPUs, k)
			continue
		}
		for _, in := range g.Xids {
			if in.Xid <= 0 || in.Count < 1 || !in.Action.Known() || in.Last.Before(in.First) {
				drop("state file: Xid history of GPU %q dropped: bad incident", k)
				g.Xids = nil
				sf.GPUs[k] = g
				break
			}
		}
	}
	for k := range sf.Flaps {
		if _, err := parsePortKey(k); err != nil {
			drop("state file: flaps of %q dropped: %v", k, err)
			delete(sf.Flaps, k)
		}
	}
	if sf.ExpectedGPUs < 0 || sf.ExpectedGPUs > maxGPUIndex+1 {
		drop("state file: expected GPUs %d ignored", sf.ExpectedGPUs)
		sf.ExpectedGPUs = 0
	}
	return &sf, warns, nil
}

func (k portKey) String() string { return k.dev + "/" + strconv.Itoa(k.port) }

func parsePortKey(s string) (portKey, error) {
	dev, p, ok := strings.Cut(s, "/")
	n, err := strconv.Atoi(p)
	if !ok || dev == "" || err != nil || n < 1 {
		return portKey{}, fmt.Errorf("port key %q: want device/port", s)
	}
	return portKey{dev: dev, port: n}, nil
}

// loadStateFile restores the engine from its state file. It never fails: problems
// become warnings, and an unusable file is moved aside.
func (e *Engine) loadStateFile(now time.Time) {
	path := e.opts.StateFile
	data, err := readLimited(path)
	if errors.Is(err, fs.ErrNotExist) {
		return
	}
	if err != nil {
		e.warn(fmt.Sprintf("state file %s: %v; starting from fresh baselines", path, err))
		return
	}
	sf, warns, err := decodeState(data, e.node)
	for _, w := range warns {
		e.warn(w)
	}
	if err != nil {
		msg := fmt.Sprintf("state file %s is unusable (%v); starting from fresh baselines", path, err)
		if aside, rerr := atomicfile.MoveAside(path); rerr == nil {
			msg += "; the old file is kept as " + aside
		} else {
			msg += fmt.Sprintf("; %v", rerr)
		}
		e.warn(msg)
		e.dirty = true
		return
	}
	e.restore(sf, now)
}

func readLimited(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if st.Size() > maxStateFile {
		return nil, fmt.Errorf("%d bytes, more than the %d a state file may have", st.Size(), maxStateFile)
	}
	data := make([]byte, st.Size())
	n, err := f.Read(data)
	if err != nil && n != len(data) {
		return nil, err
	}
	return data[:n], nil
}

func (e *Engine) warn(msg string) {
	e.warnings = append(e.warnings, msg)
	e.log.Warn("health: " + msg)
}

// restore installs a decoded state file.
func (e *Engine) restore(sf *stateFile, now time.Time) {
	rebooted := sf.BootID != "" && e.bootID != "" && sf.BootID != e.bootID
	for ks, c := range sf.Counters {
		k, _ := parseSeriesKey(ks)
		if rebooted && (k.name == telemetry.DCGMECCSBEVolTotal || k.name == telemetry.DCGMECCDBEVolTotal) {
			continue // volatile: they start again at zero with the new boot
		}
		ctr := &counter{base: c.Base, last: c.Last, lastT: c.At}
		ctr.cps = append(ctr.cps, checkpoint{c.At, c.Last})
		e.counters[k] = ctr
	}
	for ks, v := range sf.Gauges {
		k, _ := parseSeriesKey(ks)
		e.gauges[k] = v
	}
	for _, c := range sf.Conditions {
		p, _ := parsePolicy(c.Policy)
		if rebooted && (c.Kind == telemetry.ConditionNVSwitchFatal || c.Kind == telemetry.ConditionDCGMHealth) {
			// A reboot resets the NVSwitches and the GPUs, the new kernel log
			// starts empty, and DCGM reads the new boot afresh.
			continue
		}
		e.conds[condKey{c.Kind, c.Target}] = &active{c: c.Condition, policy: p, lastBad: c.LastBad, good: c.Good}
	}
	e.nodeSt = stateTrack{state: sf.NodeState.State, since: sf.NodeState.Since, probationSince: sf.NodeState.ProbationSince}
	for ks, g := range sf.GPUs {
		i, _ := strconv.Atoi(ks)
		gs := &gpuState{
			stateTrack: stateTrack{state: g.State, since: g.Since, probationSince: g.ProbationSince},
			xids:       g.Xids, override: g.Override, overrideAt: g.OverrideAt, overrideTx: g.OverrideText,
			xidMax: g.XidMax, xidSevMax: g.XidSevMax, resetAt: g.ResetAt, lastKmsg: g.LastKmsg,
			dbe: g.DBE, gone: g.Gone, known: g.Known,
		}
		if rebooted {
			// A reboot resets every GPU: what waits for a reset is over, and
			// the new boot's kernel log holds only new Xids.
			gs.xids, gs.override, gs.overrideTx, gs.overrideAt = nil, "", "", time.Time{}
			gs.xidMax, gs.xidSevMax, gs.dbe, gs.gone = "", telemetry.SeverityOK, nil, false
			gs.resetAt, gs.lastKmsg = time.Time{}, time.Time{}
		}
		e.gpus[i] = gs
	}
	for ks, ts := range sf.Flaps {
		k, _ := parsePortKey(ks)
		e.flaps[k] = ts
	}
	for kind, m := range sf.Raised {
		for sev, n := range m {
			s, err := telemetry.ParseSeverity(sev)
			if k := telemetry.ConditionKind(kind); err == nil && k.Known() && n > 0 {
				e.raised[raisedKey{k, s}] = uint64(n)
			}
		}
	}
	e.expected = sf.ExpectedGPUs
	e.sxidClearedAt = sf.SXidClearedAt
	e.lastSave = now
	if rebooted {
		e.log.Info("health: the node rebooted since the state file was written: every GPU counts as reset")
		e.dirty = true
	}
}

// snapshotState builds the state file from the engine.
func (e *Engine) snapshotState(now time.Time) *stateFile {
	sf := &stateFile{
		Version: StateVersion, Node: string(e.node), BootID: e.bootID, Saved: now, ExpectedGPUs: e.expected,
		SXidClearedAt: e.sxidClearedAt,
		Counters:      make(map[string]savedCounter, len(e.counters)), Gauges: make(map[string]float64, len(e.gauges)),
		Conditions: make([]savedCondition, 0, len(e.conds)), GPUs: make(map[string]savedGPU, len(e.gpus)),
		NodeState: savedTrack{State: e.nodeSt.state, Since: e.nodeSt.since, ProbationSince: e.nodeSt.probationSince},
	}
	for k, c := range e.counters {
		sf.Counters[k.String()] = savedCounter{Base: c.base, Last: c.last, At: c.lastT}
	}
	for k, v := range e.gauges {
		sf.Gauges[k.String()] = v
	}
	for _, a := range e.conds {
		sf.Conditions = append(sf.Conditions, savedCondition{Condition: a.c, Policy: a.policy.String(), LastBad: a.lastBad, Good: a.good})
	}
	sortSaved(sf.Conditions)
	for i, g := range e.gpus {
		sf.GPUs[strconv.Itoa(i)] = savedGPU{
			savedTrack: savedTrack{State: g.state, Since: g.since, ProbationSince: g.probationSince},
			Xids:       g.xids, Override: g.override, OverrideAt: g.overrideAt, OverrideText: g.overrideTx,
			XidMax: g.xidMax, XidSevMax: g.xidSevMax, ResetAt: g.resetAt, LastKmsg: g.lastKmsg,
			DBE: g.dbe, Gone: g.gone, Known: g.known,
		}
	}
	if len(e.flaps) > 0 {
		sf.Flaps = map[string][]time.Time{}
		for k, ts := range e.flaps {
			sf.Flaps[k.String()] = ts
		}
	}
	if len(e.raised) > 0 {
		sf.Raised = map[string]map[string]int{}
		for k, n := range e.raised {
			m := sf.Raised[string(k.kind)]
			if m == nil {
				m = map[string]int{}
				sf.Raised[string(k.kind)] = m
			}
			m[k.sev.String()] = int(n)
		}
	}
	return sf
}

func sortSaved(cs []savedCondition) {
	plain := make([]telemetry.Condition, len(cs))
	byKey := make(map[string]savedCondition, len(cs))
	for i, c := range cs {
		plain[i] = c.Condition
		byKey[c.Key()] = c
	}
	healthreport.SortConditions(plain)
	for i, c := range plain {
		cs[i] = byKey[c.Key()]
	}
}

// saveLocked writes the state file atomically (internal/atomicfile).
func (e *Engine) saveLocked(now time.Time) error {
	data, err := json.MarshalIndent(e.snapshotState(now), "", " ")
	if err != nil {
		return fmt.Errorf("encode health state: %w", err)
	}
	if err := atomicfile.WriteFile(e.opts.StateFile, append(data, '\n'), 0o600); err != nil {
		return fmt.Errorf("save health state: %w", err)
	}
	e.dirty, e.lastSave = false, now
	return nil
}
