package infiniband

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/gpuwatch/gpuwatch/telemetry"
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

// TestKeptFilesFollowTheirFiles: the health schedule keeps its files open between
// collections and still reads every change: a value rewritten in place, a file
// renamed over the kept one (as the simulated node writes), a file removed and
// made again, a port directory removed and made again (a driver reload). Close
// releases them all.
func TestKeptFilesFollowTheirFiles(t *testing.T) {
	root := copyTree(t, nodeExporterSys)
	s := mustNew(t, Options{SysfsRoot: root, DeviceInclude: "^mlx4_0$"})
	port := filepath.Join(root, "class/infiniband/mlx4_0/ports/1")
	downed := filepath.Join(port, "counters/link_downed")
	value := func() (string, error) {
		var got string
		err := s.CollectHealth(t.Context(), func(x telemetry.Sample) {
			if x.Name == telemetry.NodeIBLinkDownedTotal && x.Labels.Get("port") == "1" {
				got = strconv.FormatFloat(x.Value, 'g', -1, 64)
			}
		})
		return got, err
	}
	fds := func() int {
		ents, err := os.ReadDir("/proc/self/fd")
		if err != nil {
			t.Skipf("no /proc/self/fd: %v", err)
		}
		return len(ents)
	}
	before := fds()
	steps := []struct {
		what   string
		change func() error
		want   string
	}{
		{"as found", func() error { return nil }, "0"},
		{"rewritten in place", func() error { return os.WriteFile(downed, []byte("7\n"), 0o644) }, "7"},
		{"renamed over", func() error {
			tmp := downed + ".tmp"
			if err := os.WriteFile(tmp, []byte("8\n"), 0o644); err != nil {
				return err
			}
			return os.Rename(tmp, downed)
		}, "8"},
		{"removed", func() error { return os.Remove(downed) }, ""},
		{"made again", func() error { return os.WriteFile(downed, []byte("9\n"), 0o644) }, "9"},
		{"port directory made again", func() error {
			tmp := port + ".new"
			if err := os.CopyFS(tmp, os.DirFS(port)); err != nil {
				return err
			}
			if err := os.WriteFile(filepath.Join(tmp, "counters/link_downed"), []byte("10\n"), 0o644); err != nil {
				return err
			}
			if err := os.RemoveAll(port); err != nil {
				return err
			}
			return os.Rename(tmp, port)
		}, "10"},
	}
	for _, st := range steps {
		if err := st.change(); err != nil {
			t.Fatal(err)
		}
		got, err := value()
		if err != nil || got != st.want {
			t.Errorf("%s: link_downed %q (%v), want %q", st.what, got, err, st.want)
		}
	}
	if fds() <= before {
		t.Errorf("%d open files during collections, %d before: nothing kept open", fds(), before)
	}
	s.Close()
	if n := fds(); n != before {
		t.Errorf("%d open files after Close, %d before", n, before)
	}
}

// TestKeptBudget: the files kept open by every source of the process are bounded
// (keptBudget); past the bound a file is read with open, read, close, and reads
// the same values. Close gives the slots back.
func TestKeptBudget(t *testing.T) {
	reserveKept() // sets the budget from the limit once
	saved := keptBudget.left.Load()
	const slots = 3
	keptBudget.left.Store(slots)
	defer keptBudget.left.Store(saved)

	fds := func() int {
		ents, err := os.ReadDir("/proc/self/fd")
		if err != nil {
			t.Skipf("no /proc/self/fd: %v", err)
		}
		return len(ents)
	}
	root := copyTree(t, nodeExporterSys)
	downed := filepath.Join(root, "class/infiniband/mlx4_0/ports/1/counters/link_downed")
	s := mustNew(t, Options{SysfsRoot: root, DeviceInclude: "^mlx4_0$"})
	before := fds()
	for i, want := range []string{"0", "7", "8"} {
		if i > 0 {
			if err := os.WriteFile(downed, []byte(want+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		var got string
		n := 0
		err := s.CollectHealth(t.Context(), func(x telemetry.Sample) {
			n++
			if x.Name == telemetry.NodeIBLinkDownedTotal && x.Labels.Get("port") == "1" {
				got = strconv.FormatFloat(x.Value, 'g', -1, 64)
			}
		})
		if err != nil || got != want {
			t.Errorf("collection %d: link_downed %q (%v), want %q", i, got, err, want)
		}
		if n < 2*slots {
			t.Fatalf("collection %d: %d samples; the test needs more health files than slots", i, n)
		}
		if open := fds() - before; open != slots {
			t.Errorf("collection %d: %d files kept open, want the budget's %d", i, open, slots)
		}
		if left := keptBudget.left.Load(); left != 0 {
			t.Errorf("collection %d: %d slots left, want 0", i, left)
		}
	}
	s.Close()
	if left := keptBudget.left.Load(); left != slots {
		t.Errorf("after Close: %d slots left, want %d back", left, slots)
	}
	if n := fds(); n != before {
		t.Errorf("%d open files after Close, %d before", n, before)
	}
}
