// Package atomicfile is the one way gpuwatch replaces a file it owns (the
// agent's health state, the drain controller's state, the fair-share ledger)
// so that a crash or a full disk leaves either the old file or the new one,
// never a torn one, and the one way it moves an unreadable file aside.
//
// A write goes to a temporary file in the same directory (path + ".tmp" + a
// random suffix), which is synced and closed, then renamed over path; the
// directory is synced last, so the rename itself survives a power cut. Every
// error names the file and the step that failed, and a failed write removes its
// temporary file and leaves path as it was.
package atomicfile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// TempSuffix marks temporary files: path + TempSuffix + random characters.
const TempSuffix = ".tmp"

// CorruptSuffix is what MoveAside appends to a file's name.
const CorruptSuffix = ".corrupt"

// File is a replacement of a file being written: Write to it, then Commit to
// put it in place, or Abort to drop it. A File is not safe for concurrent use.
type File struct {
	*os.File
	path string
	done bool
}

// Create starts the replacement of path: a temporary file beside it with mode
// perm (the umask does not apply), which becomes path's mode on Commit.
func Create(path string, perm fs.FileMode) (*File, error) {
	f, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+TempSuffix+"*")
	if err != nil {
		return nil, fmt.Errorf("cannot write %s: %w", path, err)
	}
	if err := f.Chmod(perm); err != nil {
		f.Close()
		os.Remove(f.Name())
		return nil, fmt.Errorf("cannot write %s: %w", path, err)
	}
	return &File{File: f, path: path}, nil
}

// Commit syncs and closes the temporary file, renames it over the target and
// syncs the directory. On an error before the rename the temporary file is
// removed and the target is untouched; an error syncing the directory comes
// after the rename (the new content is in place but may not survive a power
// cut), and writing again is the remedy.
func (f *File) Commit() error {
	if f.done {
		return fmt.Errorf("cannot write %s: already committed or aborted", f.path)
	}
	f.done = true
	tmp := f.Name()
	if err := f.Sync(); err != nil {
		f.File.Close()
		os.Remove(tmp)
		return fmt.Errorf("cannot write %s: sync: %w", f.path, err)
	}
	if err := f.File.Close(); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("cannot write %s: %w", f.path, err)
	}
	if err := os.Rename(tmp, f.path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("cannot write %s: %w", f.path, err)
	}
	if err := syncDir(filepath.Dir(f.path)); err != nil {
		return fmt.Errorf("cannot write %s: %w", f.path, err)
	}
	return nil
}

// Abort closes and removes the temporary file, leaving the target as it was.
// After Commit it does nothing, so `defer f.Abort()` is safe.
func (f *File) Abort() {
	if f.done {
		return
	}
	f.done = true
	f.File.Close()
	os.Remove(f.Name())
}

// WriteFile replaces path with data (Create, Write, Commit).
func WriteFile(path string, data []byte, perm fs.FileMode) error {
	f, err := Create(path, perm)
	if err != nil {
		return err
	}
	defer f.Abort()
	if _, err := f.Write(data); err != nil {
		return fmt.Errorf("cannot write %s: %w", path, err)
	}
	return f.Commit()
}

// RemoveTemps removes the temporary files a crash during a write of path left
// beside it, and returns how many it removed.
func RemoveTemps(path string) (int, error) {
	matches, err := filepath.Glob(globEscape(path) + TempSuffix + "*")
	if err != nil {
		return 0, fmt.Errorf("cannot look for temporary files of %s: %w", path, err)
	}
	n := 0
	var errs []error
	for _, m := range matches {
		if err := os.Remove(m); err != nil {
			errs = append(errs, err)
			continue
		}
		n++
	}
	if err := errors.Join(errs...); err != nil {
		return n, fmt.Errorf("cannot remove temporary files of %s: %w", path, err)
	}
	return n, nil
}

// MoveAside renames an unreadable file to path + CorruptSuffix (replacing an
// earlier one), so that it is kept for a person to look at and path is free
// for a fresh start, and syncs the directory. It returns the new name.
func MoveAside(path string) (string, error) {
	aside := path + CorruptSuffix
	if err := os.Rename(path, aside); err != nil {
		return "", fmt.Errorf("cannot move %s aside: %w", path, err)
	}
	if err := syncDir(filepath.Dir(path)); err != nil {
		return aside, fmt.Errorf("cannot move %s aside: %w", path, err)
	}
	return aside, nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("sync directory: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("sync directory %s: %w", dir, err)
	}
	return nil
}

// globEscape quotes the characters filepath.Match treats specially.
func globEscape(s string) string {
	out := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '*', '?', '[', ']', '\\':
			out = append(out, '\\')
		}
		out = append(out, s[i])
	}
	return string(out)
}
