package fairshare

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"sort"
	"time"

	"github.com/gpuwatch/gpuwatch/internal/atomicfile"
)

// LedgerFileVersion is the version of the ledger file format Save writes and
// Load reads.
const LedgerFileVersion = 1

// maxLedgerFile bounds what Load reads (a ledger of a large site is a few MB).
const maxLedgerFile = 256 << 20

type ledgerFile struct {
	Version int `json:"version"`
	// ReferenceTime is the time the entries are decayed to.
	ReferenceTime   time.Time       `json:"reference_time"`
	LastInput       time.Time       `json:"last_input"`
	HalfLifeSeconds float64         `json:"half_life_seconds"`
	Entries         []ledgerEntry   `json:"entries"`
	Watermarks      []ledgerWatermk `json:"watermarks"`
}

type ledgerEntry struct {
	Account    string  `json:"account"`
	User       string  `json:"user"`
	Measured   float64 `json:"measured_gpu_seconds"`
	Allocated  float64 `json:"allocated_gpu_seconds"`
	Unmeasured float64 `json:"unmeasured_gpu_seconds"`
}

type ledgerWatermk struct {
	GPU     string    `json:"gpu"`
	Slice   string    `json:"slice,omitempty"`
	Job     string    `json:"job"`
	Through time.Time `json:"through"`
}

// Save writes the ledger to path atomically (internal/atomicfile), so a crash
// leaves either the old file or the new one.
func (l *Ledger) Save(path string) error {
	l.mu.Lock()
	f := ledgerFile{Version: LedgerFileVersion, ReferenceTime: l.ref, LastInput: l.lastInput,
		HalfLifeSeconds: l.opts.HalfLife.Seconds(),
		Entries:         make([]ledgerEntry, 0, len(l.entries)), Watermarks: make([]ledgerWatermk, 0, len(l.marks))}
	for a, e := range l.entries {
		f.Entries = append(f.Entries, ledgerEntry{Account: a.Account, User: a.User, Measured: e.Measured, Allocated: e.Allocated, Unmeasured: e.Unmeasured})
	}
	for k, t := range l.marks {
		f.Watermarks = append(f.Watermarks, ledgerWatermk{GPU: k.GPU, Slice: k.Slice, Job: k.Job, Through: t})
	}
	l.mu.Unlock()
	sort.Slice(f.Entries, func(i, j int) bool {
		a, b := f.Entries[i], f.Entries[j]
		return a.Account < b.Account || a.Account == b.Account && a.User < b.User
	})
	sort.Slice(f.Watermarks, func(i, j int) bool {
		a, b := f.Watermarks[i], f.Watermarks[j]
		if a.GPU != b.GPU {
			return a.GPU < b.GPU
		}
		if a.Slice != b.Slice {
			return a.Slice < b.Slice
		}
		return a.Job < b.Job
	})
	data, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return fmt.Errorf("cannot save fair-share ledger %s: %w", path, err)
	}
	if err := atomicfile.WriteFile(path, append(data, '\n'), 0o600); err != nil {
		return fmt.Errorf("cannot save fair-share ledger: %w", err)
	}
	return nil
}

// LoadLedger reads a ledger that Save wrote. The options are the current
// configuration (the file keeps usage, not policy). A missing file gives an
// error matching fs.ErrNotExist, so a first start can begin with NewLedger.
// Every error names the file.
func LoadLedger(path string, opts LedgerOptions) (*Ledger, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("cannot load fair-share ledger: %w", err)
	}
	defer f.Close()
	return ReadLedger(path, f, opts)
}

// ReadLedger is LoadLedger from a reader; name is used in errors.
func ReadLedger(name string, r io.Reader, opts LedgerOptions) (*Ledger, error) {
	fail := func(format string, args ...any) (*Ledger, error) {
		return nil, fmt.Errorf("cannot load fair-share ledger %s: %s", name, fmt.Sprintf(format, args...))
	}
	l, err := NewLedger(opts)
	if err != nil {
		return nil, fmt.Errorf("cannot load fair-share ledger %s: %w", name, err)
	}
	data, err := io.ReadAll(io.LimitReader(r, maxLedgerFile+1))
	if err != nil {
		return fail("%v", err)
	}
	if len(data) > maxLedgerFile {
		return fail("file is larger than %d bytes", maxLedgerFile)
	}
	var probe struct {
		Version *int `json:"version"`
	}
	if err := json.Unmarshal(data, &probe); err != nil {
		return fail("not a ledger file: %v", err)
	}
	if probe.Version == nil {
		return fail("no version field: not a ledger file")
	}
	if *probe.Version != LedgerFileVersion {
		return fail("unsupported version %d (this gpuwatch reads version %d)", *probe.Version, LedgerFileVersion)
	}
	var f ledgerFile
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return fail("%v", err)
	}
	if f.LastInput.After(f.ReferenceTime) {
		return fail("last_input %s is after reference_time %s", f.LastInput.Format(time.RFC3339Nano), f.ReferenceTime.Format(time.RFC3339Nano))
	}
	if f.ReferenceTime.IsZero() && (len(f.Entries) > 0 || len(f.Watermarks) > 0) {
		return fail("entries without a reference_time")
	}
	for i, e := range f.Entries {
		a := Assoc{Account: e.Account, User: e.User}
		if err := checkName(e.Account); err != nil {
			return fail("entries[%d]: account: %v", i, err)
		}
		if err := checkName(e.User); err != nil {
			return fail("entries[%d]: user: %v", i, err)
		}
		for _, v := range []float64{e.Measured, e.Allocated, e.Unmeasured} {
			if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
				return fail("entries[%d] (%s): usage %v is not a non-negative number", i, a, v)
			}
		}
		if _, dup := l.entries[a]; dup {
			return fail("entries[%d]: %s appears twice", i, a)
		}
		l.entries[a] = &UsageEntry{Measured: e.Measured, Allocated: e.Allocated, Unmeasured: e.Unmeasured}
	}
	for i, w := range f.Watermarks {
		if w.GPU == "" || w.Job == "" {
			return fail("watermarks[%d]: gpu and job must be set", i)
		}
		if w.Through.IsZero() || w.Through.After(f.ReferenceTime) {
			return fail("watermarks[%d]: through %s is not within the ledger's time", i, w.Through.Format(time.RFC3339Nano))
		}
		k := markKey{GPU: w.GPU, Slice: w.Slice, Job: w.Job}
		if _, dup := l.marks[k]; dup {
			return fail("watermarks[%d]: gpu %q slice %q job %q appears twice", i, w.GPU, w.Slice, w.Job)
		}
		l.marks[k] = w.Through
	}
	l.ref, l.lastInput = f.ReferenceTime, f.LastInput
	return l, nil
}
