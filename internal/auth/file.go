package auth

import (
	"log/slog"
	"os"
	"sync"
	"time"
)

// TokenFile is a token file that is read again when it changes, so tokens
// are added, rotated and revoked without a restart. A change that does not
// parse keeps the tokens in force and is logged; nothing is ever loosened by
// a broken file.
type TokenFile struct {
	path string
	log  *slog.Logger

	mu      sync.Mutex
	tokens  *Tokens
	mod     time.Time
	size    int64
	checked time.Time
	// badMod is the modification time of a change that did not parse, so it
	// is reported once.
	badMod time.Time
}

// checkEvery bounds how often the file is stat'ed.
const checkEvery = time.Second

// OpenTokenFile loads a token file; an error names the file, line and field.
func OpenTokenFile(path string, log *slog.Logger) (*TokenFile, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	t, err := LoadTokens(path)
	if err != nil {
		return nil, err
	}
	return &TokenFile{path: path, log: log, tokens: t, mod: st.ModTime(), size: st.Size(), checked: time.Now()}, nil
}

// Path is the file's name.
func (f *TokenFile) Path() string { return f.path }

// Get returns the tokens in force, re-reading the file when its size or
// modification time changed (checked at most once a second).
func (f *TokenFile) Get() *Tokens {
	f.mu.Lock()
	defer f.mu.Unlock()
	now := time.Now()
	if now.Sub(f.checked) < checkEvery {
		return f.tokens
	}
	f.checked = now
	st, err := os.Stat(f.path)
	if err != nil {
		if f.badMod.IsZero() {
			f.log.Error("cannot read the token file; the tokens loaded before stay in force", "file", f.path, "err", err)
			f.badMod = now
		}
		return f.tokens
	}
	if st.ModTime().Equal(f.mod) && st.Size() == f.size {
		return f.tokens
	}
	t, err := LoadTokens(f.path)
	if err != nil {
		if !st.ModTime().Equal(f.badMod) {
			f.log.Error("the token file changed but does not load; the tokens loaded before stay in force", "err", err)
			f.badMod = st.ModTime()
		}
		return f.tokens
	}
	f.tokens, f.mod, f.size, f.badMod = t, st.ModTime(), st.Size(), time.Time{}
	f.log.Info("token file reloaded", "file", f.path, "tokens", t.Len())
	return f.tokens
}
