package drain

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/gpuwatch/gpuwatch/internal/atomicfile"
	"github.com/gpuwatch/gpuwatch/telemetry"
)

// File names inside Options.Dir.
const (
	StateFileName = "drain-state.json"
	AuditFileName = "drain-audit.jsonl"
)

// stateVersion is the layout of the state file.
const stateVersion = 1

// maxStateFile bounds the state file read at start.
const maxStateFile = 256 << 20

// Outcome is what became of a decision or an actuation, as written in the audit log
// and the gpuwatch_drain_actions_total metric.
type Outcome string

// Outcomes.
const (
	OutcomePending         Outcome = "pending"           // decided; the worker will actuate
	OutcomeAccepted        Outcome = "accepted"          // the actuator took it (or State showed it had already)
	OutcomeRetrying        Outcome = "retrying"          // the actuator failed; tried again after back-off
	OutcomeFailed          Outcome = "failed"            // the actuator failed permanently; the node is held
	OutcomeRefused         Outcome = "refused"           // the scheduler refused the remedy (a reboot) for good; the weaker containment follows
	OutcomeSkippedNotOwned Outcome = "skipped-not-owned" // the node is drained by someone else: never touched
	OutcomeSkippedBudget   Outcome = "skipped-budget"    // would drain, budget exhausted
	OutcomeDryRun          Outcome = "dry-run"           // decided; the actuator was not called
	OutcomeRecorded        Outcome = "recorded"          // no actuation involved (exclusions, transitions, probation)
)

// AuditRecord is one line of the audit log.
type AuditRecord struct {
	Time time.Time `json:"time"`
	Node string    `json:"node"`
	GPU  string    `json:"gpu,omitempty"` // UUID, or the index when the UUID is unknown
	// Event is decision (automation decided something), actuation (the worker
	// called the actuator), transition (a node changed state), manual (a person
	// asked), budget (the circuit breaker changed), clock (the wall clock was
	// stepped and the controller's timers moved with it) or recovery (what a
	// restart after a crash found: a torn last line, records written after the
	// last save; From and To then say what the log last said of the node and
	// the state it was restored to) or takeover (a controller that became the
	// one acting reconciled its state with the scheduler's drains: Action adopt,
	// release or evacuate, From and To the node's state before and after;
	// Controller.Takeover).
	Event string `json:"event"`
	// Action is cordon, drain, requeue, reboot, evacuate, resume, exclude-gpu,
	// include-gpu, probation or budget-reset.
	Action   string                `json:"action,omitempty"`
	Rule     string                `json:"rule,omitempty"`
	Reason   string                `json:"reason,omitempty"`
	From     string                `json:"from,omitempty"`
	To       string                `json:"to,omitempty"`
	Evidence []telemetry.Condition `json:"evidence,omitempty"`
	Budget   BudgetStatus          `json:"budget"`
	DryRun   bool                  `json:"dry_run"`
	Outcome  Outcome               `json:"outcome"`
	Attempt  int                   `json:"attempt,omitempty"`
	Error    string                `json:"error,omitempty"`
	User     string                `json:"user,omitempty"`
	Note     string                `json:"note,omitempty"`
}

// auditLog appends fsync'd JSON lines.
type auditLog struct {
	path string
	f    *os.File
	// size is the log's length after the last complete append: the state file
	// records it, so that a restart knows which records came after the last
	// save.
	size int64
	// opened is the length found at open, before any repair; torn is the length
	// of the torn last line found then (0: none).
	opened, torn int64
	// broken: an append failed and may have left part of a line.
	broken bool
}

func openAudit(dir string) (*auditLog, error) {
	path := filepath.Join(dir, AuditFileName)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_APPEND|os.O_CREATE, 0o640)
	if err != nil {
		return nil, fmt.Errorf("cannot open drain audit log: %w", err)
	}
	a := &auditLog{path: path, f: f}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("cannot open drain audit log: %w", err)
	}
	a.size, a.opened = st.Size(), st.Size()
	// A crash in the middle of a write leaves a torn last line: end it, so the next
	// record starts on its own line (readers skip the torn one).
	if a.size > 0 {
		tail := make([]byte, min(a.size, 64<<10))
		if _, err := f.ReadAt(tail, a.size-int64(len(tail))); err == nil && tail[len(tail)-1] != '\n' {
			a.torn = int64(len(tail) - 1 - bytes.LastIndexByte(tail, '\n'))
			if _, err := f.Write([]byte("\n")); err != nil {
				f.Close()
				return nil, fmt.Errorf("cannot repair drain audit log %s: %w", path, err)
			}
			a.size++
		}
	}
	return a, nil
}

func (a *auditLog) append(r AuditRecord) error {
	b, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("cannot encode audit record: %w", err)
	}
	b = append(b, '\n')
	if a.broken {
		// The failed append may have written part of its line: this record
		// starts on a line of its own.
		b = append([]byte{'\n'}, b...)
	}
	if _, err := a.f.Write(b); err != nil {
		a.broken = true
		if st, serr := a.f.Stat(); serr == nil {
			a.size = st.Size()
		}
		return fmt.Errorf("cannot append to %s: %w", a.path, err)
	}
	if err := a.f.Sync(); err != nil {
		a.broken = true
		return fmt.Errorf("cannot sync %s: %w", a.path, err)
	}
	a.size += int64(len(b))
	a.broken = false
	return nil
}

func (a *auditLog) close() error { return a.f.Close() }

// readAudit returns the records at or after since, oldest first; with limit > 0 only
// the latest limit of them. Lines that do not decode (a torn write) are skipped.
func readAudit(path string, since time.Time, limit int) ([]AuditRecord, error) {
	out := []AuditRecord{}
	_, err := scanAudit(path, 0, -1, func(r AuditRecord) {
		if r.Time.Before(since) {
			return
		}
		out = append(out, r)
		if limit > 0 && len(out) > 2*limit {
			out = append(out[:0], out[len(out)-limit:]...)
		}
	})
	if err != nil {
		return nil, err
	}
	if limit > 0 && len(out) > limit {
		out = out[len(out)-limit:]
	}
	return out, nil
}

// scanAudit calls f with every record of the log from byte offset on (up to
// byte end; -1: the end of the log), oldest first, and returns how many
// non-empty lines did not decode (torn writes). A missing log has no records.
func scanAudit(path string, offset, end int64, f func(AuditRecord)) (skipped int, err error) {
	fh, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("cannot read drain audit log: %w", err)
	}
	defer fh.Close()
	if _, err := fh.Seek(offset, io.SeekStart); err != nil {
		return 0, fmt.Errorf("cannot read %s: %w", path, err)
	}
	var rd io.Reader = fh
	if end >= 0 {
		rd = io.LimitReader(fh, end-offset)
	}
	br := bufio.NewReaderSize(rd, 64<<10)
	for {
		line, err := br.ReadBytes('\n')
		if len(bytes.TrimSpace(line)) > 0 && (err == nil || errors.Is(err, io.EOF)) {
			var r AuditRecord
			if json.Unmarshal(line, &r) == nil {
				f(r)
			} else {
				skipped++
			}
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				return skipped, nil
			}
			return skipped, fmt.Errorf("cannot read %s: %w", path, err)
		}
	}
}

// stateFile is what survives a restart.
type stateFile struct {
	Version int                   `json:"version"`
	Saved   time.Time             `json:"saved"`
	NextID  uint64                `json:"next_id"`
	Nodes   map[string]*nodeTrack `json:"nodes"`
	Budget  budgetState           `json:"budget"`
	// AuditSize is the audit log's length when the state was saved: records
	// after it were written after the last save (absent in files written before
	// it was kept).
	AuditSize *int64 `json:"audit_size,omitempty"`
}

// writeState replaces the state file at path with data (internal/atomicfile),
// with the crash point "rename" between writing the temporary file and the
// rename.
func writeState(path string, data []byte) error {
	f, err := atomicfile.Create(path, 0o600)
	if err != nil {
		return err
	}
	defer f.Abort()
	if _, err := f.Write(data); err != nil {
		return fmt.Errorf("cannot write %s: %w", path, err)
	}
	crashPoint("rename")
	return f.Commit()
}

// crashHook, when set (by tests only), is called at named points where a crash
// leaves interesting state behind: "save" (audit records written, the state not
// yet saved) and "rename" (the new state file written under its temporary name).
var crashHook func(point string)

func crashPoint(point string) {
	if crashHook != nil {
		crashHook(point)
	}
}

// loadState reads the state file; a missing file is (nil, nil).
func loadState(path string) (*stateFile, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxStateFile+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxStateFile {
		return nil, fmt.Errorf("larger than %d bytes", maxStateFile)
	}
	var sf stateFile
	if err := json.Unmarshal(data, &sf); err != nil {
		return nil, fmt.Errorf("not a drain state file: %w", err)
	}
	if sf.Version != stateVersion {
		return nil, fmt.Errorf("version %d, want %d", sf.Version, stateVersion)
	}
	for name, n := range sf.Nodes {
		if n == nil || !n.State.Valid() {
			return nil, fmt.Errorf("node %q: invalid entry", name)
		}
		n.init()
	}
	if sf.Nodes == nil {
		sf.Nodes = map[string]*nodeTrack{}
	}
	return &sf, nil
}
