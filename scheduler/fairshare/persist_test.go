package fairshare

import (
	"bytes"
	"errors"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestLedgerSaveLoad(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "ledger.json")
	opts := LedgerOptions{Policy: Policy{Charge: ChargeMeasured, IdleFloor: 0.1}, HalfLife: time.Hour, StaleAfter: time.Hour}
	l := newTestLedger(t, opts)
	batch := []Sample{
		sample("1", "a", "u", "GPU-0", 0, 100*time.Second, SourceDCGMSMActive, 0.5),
		sample("2", "b", "v", "GPU-1", 0, 100*time.Second, SourceNone, 0),
	}
	through := t0.Add(100 * time.Second)
	if _, err := l.Record(through, batch); err != nil {
		t.Fatal(err)
	}
	if err := l.Save(path); err != nil {
		t.Fatal(err)
	}
	// Save twice: the second replaces the first through a rename.
	if err := l.Save(path); err != nil {
		t.Fatal(err)
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 {
		t.Errorf("directory holds %d entries after Save, want only the ledger (no temp files)", len(ents))
	}
	got, err := LoadLedger(path, opts)
	if err != nil {
		t.Fatal(err)
	}
	at := through.Add(30 * time.Minute)
	want, _ := l.Usage(at)
	have, err := got.Usage(at)
	if err != nil {
		t.Fatal(err)
	}
	if len(have.Entries) != 2 || !have.LastInput.Equal(through) {
		t.Fatalf("loaded %d entries, last input %v", len(have.Entries), have.LastInput)
	}
	for a, e := range want.Entries {
		if have.Entries[a] != e {
			t.Errorf("%v: loaded %+v, saved %+v", a, have.Entries[a], e)
		}
	}
	// Watermarks survive: a replay after a restart charges nothing.
	res, err := got.Record(through, batch)
	if err != nil || res.Duplicates != 2 {
		t.Errorf("replay after load: %+v %v, want 2 duplicates", res, err)
	}
}

func TestLedgerLoadErrors(t *testing.T) {
	dir := t.TempDir()
	opts := LedgerOptions{Policy: Policy{Charge: ChargeMeasured}}
	missing := filepath.Join(dir, "missing.json")
	if _, err := LoadLedger(missing, opts); !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), missing) {
		t.Errorf("missing file: %v, want fs.ErrNotExist naming %s", err, missing)
	}
	tests := []struct {
		name, content, want string
	}{
		{"not json", "hello", "not a ledger file"},
		{"no version", `{"entries":[]}`, "no version field"},
		{"future version", `{"version":2}`, "unsupported version 2"},
		{"unknown field", `{"version":1,"extra":1}`, `unknown field "extra"`},
		{"negative usage", `{"version":1,"reference_time":"2026-01-01T00:00:00Z","last_input":"2026-01-01T00:00:00Z","entries":[{"account":"a","user":"u","measured_gpu_seconds":-1,"allocated_gpu_seconds":1,"unmeasured_gpu_seconds":0}]}`, "usage -1"},
		{"duplicate entry", `{"version":1,"reference_time":"2026-01-01T00:00:00Z","entries":[{"account":"a","user":"u"},{"account":"a","user":"u"}]}`, "appears twice"},
		{"empty user", `{"version":1,"reference_time":"2026-01-01T00:00:00Z","entries":[{"account":"a","user":""}]}`, "entries[0]: user"},
		{"input after reference", `{"version":1,"reference_time":"2026-01-01T00:00:00Z","last_input":"2026-01-02T00:00:00Z"}`, "is after reference_time"},
		{"watermark without job", `{"version":1,"reference_time":"2026-01-01T00:00:00Z","watermarks":[{"gpu":"g","job":"","through":"2026-01-01T00:00:00Z"}]}`, "watermarks[0]"},
	}
	for _, tc := range tests {
		path := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "_")+".json")
		if err := os.WriteFile(path, []byte(tc.content), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := LoadLedger(path, opts)
		if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error naming %s and saying %q", tc.name, err, path, tc.want)
		}
	}
}

func TestLedgerSaveError(t *testing.T) {
	l := newTestLedger(t, LedgerOptions{})
	path := filepath.Join(t.TempDir(), "no", "such", "dir", "ledger.json")
	if err := l.Save(path); err == nil || !strings.Contains(err.Error(), path) {
		t.Errorf("save into a missing directory: %v, want an error naming %s", err, path)
	}
}

func FuzzReadLedger(f *testing.F) {
	l, _ := NewLedger(LedgerOptions{Policy: Policy{Charge: ChargeMeasured}})
	s := sample("1", "a", "u", "GPU-0", 0, 100*time.Second, SourceDCGMSMActive, 0.5)
	_, _ = l.Record(s.End(), []Sample{s})
	path := filepath.Join(f.TempDir(), "l.json")
	if err := l.Save(path); err != nil {
		f.Fatal(err)
	}
	saved, _ := os.ReadFile(path)
	f.Add(saved)
	f.Add([]byte(`{"version":1}`))
	f.Add([]byte(``))
	f.Add([]byte(`{"version":1,"reference_time":"2026-01-01T00:00:00Z","entries":[{"account":"a","user":"u","measured_gpu_seconds":1e308}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		l, err := ReadLedger("fuzz.json", bytes.NewReader(data), LedgerOptions{Policy: Policy{Charge: ChargeMeasured}})
		if err != nil {
			if !strings.Contains(err.Error(), "fuzz.json") {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		// A ledger that loads must save and load back to the same usage.
		out := filepath.Join(t.TempDir(), "out.json")
		if err := l.Save(out); err != nil {
			t.Fatal(err)
		}
		back, err := LoadLedger(out, LedgerOptions{Policy: Policy{Charge: ChargeMeasured}})
		if err != nil {
			t.Fatalf("reloading a saved ledger: %v", err)
		}
		now := l.LastInput()
		a, _ := l.Usage(now)
		b, _ := back.Usage(now)
		if len(a.Entries) != len(b.Entries) {
			t.Fatalf("round trip: %d entries, then %d", len(a.Entries), len(b.Entries))
		}
		for k, e := range a.Entries {
			if !sameBits(b.Entries[k], e) {
				t.Fatalf("round trip %v: %+v, then %+v", k, e, b.Entries[k])
			}
		}
	})
}

func sameBits(a, b UsageEntry) bool {
	eq := func(x, y float64) bool { return math.Float64bits(x) == math.Float64bits(y) }
	return eq(a.Measured, b.Measured) && eq(a.Allocated, b.Allocated) && eq(a.Unmeasured, b.Unmeasured) && eq(a.Charged, b.Charged)
}
