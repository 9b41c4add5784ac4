package infiniband

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReaderRead: a file's whole content in one read, absent files are not an
// error, a file too long or unreadable is one that names it.
func TestReaderRead(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	var r reader
	if b, ok := r.read(write("state", "4: ACTIVE\n")); !ok || string(b) != "4: ACTIVE\n" || len(r.errs) != 0 {
		t.Errorf("state: %q %v %v", b, ok, r.errs)
	}
	if b, ok := r.read(write("max", strings.Repeat("9", 255))); !ok || len(b) != 255 {
		t.Errorf("255 bytes: %d %v %v", len(b), ok, r.errs)
	}
	if _, ok := r.read(filepath.Join(dir, "absent")); ok || len(r.errs) != 0 {
		t.Errorf("absent file: ok %v, errors %v", ok, r.errs)
	}
	long := write("long", strings.Repeat("9", 256))
	if _, ok := r.read(long); ok || len(r.errs) != 1 || !strings.Contains(r.errs[0].Error(), long) {
		t.Errorf("256 bytes: ok %v, errors %v", ok, r.errs)
	}
	if _, ok := r.read(dir); ok || len(r.errs) != 2 || !strings.Contains(r.errs[1].Error(), "read "+dir) {
		t.Errorf("a directory: ok %v, errors %v", ok, r.errs)
	}
}
