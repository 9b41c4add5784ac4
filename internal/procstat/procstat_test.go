package procstat

import (
	"os"
	"testing"
	"time"
)

func TestParseStat(t *testing.T) {
	// A real /proc/PID/stat line; the command name has a space and a ')' in it.
	line := "1234 (gpu watch)) S 1 1234 1234 0 -1 4194560 1000 0 0 0 250 75 0 0 20 0 12 0 100 1000000 500 18446744073709551615"
	d, err := parseStat("stat", line)
	if err != nil || d != 3250*time.Millisecond {
		t.Errorf("parseStat = %v, %v; want 3.25s (250+75 ticks)", d, err)
	}
	for _, bad := range []string{"no name", "1 (x) S 1 2", "1 (x) S 1 1 1 0 -1 0 0 0 0 0 u s"} {
		if _, err := parseStat("stat", bad); err == nil {
			t.Errorf("parseStat(%q) accepted", bad)
		}
	}
}

func TestSelf(t *testing.T) {
	if _, err := CPU(os.Getpid()); err != nil {
		t.Fatal(err)
	}
	rss, hwm, err := Mem("self")
	if err != nil || rss == 0 || hwm < rss {
		t.Errorf("Mem(self) = %d, %d, %v", rss, hwm, err)
	}
}

func TestStatus(t *testing.T) {
	st, err := Status("self", "VmRSS", "RssAnon", "RssFile", "NoSuchField")
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	if st["VmRSS"] == 0 || st["RssAnon"] == 0 || st["RssAnon"]+st["RssFile"] > st["VmRSS"] {
		t.Errorf("status %v", st)
	}
	if _, ok := st["NoSuchField"]; ok {
		t.Error("a field the kernel does not report")
	}
}
