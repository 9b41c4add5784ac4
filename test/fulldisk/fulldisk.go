// Package fulldisk gives fault tests a real full disk: a small tmpfs mounted
// for the test (skipped where mounting is not permitted: not root, no
// CAP_SYS_ADMIN) and a file that fills it up to a chosen free space.
package fulldisk

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// Tmpfs mounts a tmpfs of size bytes on a temporary directory, unmounted when
// t ends, or skips t where mounting is not permitted.
func Tmpfs(t testing.TB, size int) string {
	t.Helper()
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, fmt.Sprintf("size=%d,mode=0755", size)); err != nil {
		t.Skipf("cannot mount a tmpfs to fill up (%v); run the tests as root to see a real full disk", err)
	}
	t.Cleanup(func() {
		if err := syscall.Unmount(dir, syscall.MNT_DETACH); err != nil {
			t.Errorf("unmount %s: %v", dir, err)
		}
	})
	return dir
}

// Fill writes path until its file system has about keep bytes free (roughly:
// tmpfs counts pages); a write that meets the full disk first is not an error.
func Fill(t testing.TB, path string, keep int64) {
	t.Helper()
	var st syscall.Statfs_t
	if err := syscall.Statfs(filepath.Dir(path), &st); err != nil {
		t.Fatal(err)
	}
	free := int64(st.Bavail)*int64(st.Bsize) - keep
	if free <= 0 {
		return
	}
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(make([]byte, free)); err != nil && !errors.Is(err, syscall.ENOSPC) {
		t.Fatal(err)
	}
}
