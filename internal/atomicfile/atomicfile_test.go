package atomicfile

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/gpuwatch/gpuwatch/test/fulldisk"
)

func TestWriteFileReplaces(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "state.json")
	for _, content := range []string{"first\n", "second, longer than the first\n", ""} {
		if err := WriteFile(path, []byte(content), 0o640); err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(path)
		if err != nil || string(got) != content {
			t.Fatalf("read back %q (%v), want %q", got, err, content)
		}
	}
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o640 {
		t.Errorf("mode %v, want 0640", st.Mode().Perm())
	}
	assertOnly(t, dir, "state.json")
}

func TestAbortLeavesTarget(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "state.json")
	if err := WriteFile(path, []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := Create(path, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write([]byte("new")); err != nil {
		t.Fatal(err)
	}
	f.Abort()
	f.Abort() // twice is harmless
	if err := f.Commit(); err == nil || !strings.Contains(err.Error(), path) {
		t.Errorf("Commit after Abort: %v, want an error naming %s", err, path)
	}
	if got, _ := os.ReadFile(path); string(got) != "old" {
		t.Errorf("target %q after Abort, want old", got)
	}
	assertOnly(t, dir, "state.json")
}

// A crash between writing the temporary file and the rename leaves the
// temporary file: RemoveTemps finds it (also when the name has glob
// characters) and nothing else.
func TestRemoveTemps(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "st[a]te*.json")
	other := filepath.Join(dir, "other.json")
	for _, p := range []string{path, other} {
		if err := WriteFile(p, []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range []string{path, other} {
		f, err := Create(p, 0o600)
		if err != nil {
			t.Fatal(err)
		}
		f.File.Close() // the process died here: no Commit, no Abort
	}
	n, err := RemoveTemps(path)
	if err != nil || n != 1 {
		t.Fatalf("RemoveTemps: %d, %v; want 1 removed", n, err)
	}
	if n, _ := RemoveTemps(path); n != 0 {
		t.Errorf("second RemoveTemps removed %d", n)
	}
	if n, _ := RemoveTemps(other); n != 1 {
		t.Errorf("the other file's temporary file: %d removed, want 1", n)
	}
	assertOnly(t, dir, "other.json", "st[a]te*.json")
}

func TestMoveAside(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "state.json")
	for _, content := range []string{"bad one", "bad two"} {
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		aside, err := MoveAside(path)
		if err != nil || aside != path+CorruptSuffix {
			t.Fatalf("MoveAside: %q, %v", aside, err)
		}
		if got, _ := os.ReadFile(aside); string(got) != content {
			t.Errorf("aside holds %q, want %q", got, content)
		}
	}
	if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the file is still there: %v", err)
	}
	_, err := MoveAside(path)
	if !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), "cannot move "+path+" aside") {
		t.Errorf("moving a missing file: %v", err)
	}
}

func TestMissingDirectory(t *testing.T) {
	path := filepath.Join(t.TempDir(), "gone", "state.json")
	err := WriteFile(path, []byte("x"), 0o600)
	if !errors.Is(err, fs.ErrNotExist) || !strings.HasPrefix(err.Error(), "cannot write "+path+": ") {
		t.Fatalf("write into a missing directory: %v", err)
	}
}

// On a full disk the write fails naming the file, the old content stays and no
// temporary file is left behind; once there is room again the write succeeds.
func TestFullDisk(t *testing.T) {
	dir := fulldisk.Tmpfs(t, 256<<10)
	path := filepath.Join(dir, "state.json")
	old := []byte("the old state\n")
	if err := WriteFile(path, old, 0o600); err != nil {
		t.Fatal(err)
	}
	filler := filepath.Join(dir, "filler")
	fulldisk.Fill(t, filler, 16<<10)
	big := bytes.Repeat([]byte("x"), 64<<10)
	err := WriteFile(path, big, 0o600)
	if !errors.Is(err, syscall.ENOSPC) || !strings.HasPrefix(err.Error(), "cannot write "+path+": ") {
		t.Fatalf("write on a full disk: %v, want ENOSPC naming %s", err, path)
	}
	if got, _ := os.ReadFile(path); !bytes.Equal(got, old) {
		t.Fatalf("after the failed write the file holds %d bytes, want the old %d", len(got), len(old))
	}
	assertOnly(t, dir, "filler", "state.json")
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(path, big, 0o600); err != nil {
		t.Fatalf("write after freeing space: %v", err)
	}
}

// On a read-only file system nothing can be written or moved aside, and the
// errors say so and name the file.
func TestReadOnly(t *testing.T) {
	dir := fulldisk.Tmpfs(t, 64<<10)
	path := filepath.Join(dir, "state.json")
	if err := WriteFile(path, []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount("", dir, "", syscall.MS_REMOUNT|syscall.MS_RDONLY, ""); err != nil {
		t.Fatalf("remount read-only: %v", err)
	}
	err := WriteFile(path, []byte("new"), 0o600)
	if !errors.Is(err, syscall.EROFS) || !strings.Contains(err.Error(), path) {
		t.Errorf("write on a read-only file system: %v", err)
	}
	_, err = MoveAside(path)
	if !errors.Is(err, syscall.EROFS) || !strings.Contains(err.Error(), path) {
		t.Errorf("move aside on a read-only file system: %v", err)
	}
	if got, _ := os.ReadFile(path); string(got) != "old" {
		t.Errorf("file holds %q, want old", got)
	}
}

// assertOnly fails unless dir holds exactly the named files.
func assertOnly(t *testing.T, dir string, names ...string) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range ents {
		got = append(got, e.Name())
	}
	if strings.Join(got, ",") != strings.Join(names, ",") {
		t.Errorf("directory holds %q, want %q", got, names)
	}
}
