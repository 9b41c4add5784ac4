// Package procstat reads a process's CPU time and memory from /proc, for the
// benchmark programs (internal/agentbench, internal/storebench) that measure
// real processes: utime+stime from /proc/PID/stat, VmRSS and VmHWM (and any
// other kB field, such as RssAnon and RssFile) from /proc/PID/status.
package procstat

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
)

// UserHZ is the unit of utime and stime in /proc/PID/stat and of /proc/stat's
// counters (USER_HZ, 100 on Linux).
const UserHZ = 100

// CPU reads utime+stime of a process.
func CPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	return parseStat(fmt.Sprintf("/proc/%d/stat", pid), string(b))
}

func parseStat(name, s string) (time.Duration, error) {
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, fmt.Errorf("%s: no command name", name)
	}
	f := strings.Fields(s[i+1:]) // f[0] is field 3 (state): utime is field 14, stime 15
	if len(f) < 13 {
		return 0, fmt.Errorf("%s: %d fields after the command name, want at least 13", name, len(f))
	}
	ut, err1 := strconv.ParseUint(f[11], 10, 64)
	st, err2 := strconv.ParseUint(f[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, fmt.Errorf("%s: %w", name, err)
	}
	return time.Duration(ut+st) * time.Second / UserHZ, nil
}

// Mem reads VmRSS and VmHWM of a process ("self" for this one), in bytes.
func Mem(pid string) (rss, hwm uint64, err error) {
	f, err := os.Open("/proc/" + pid + "/status")
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok || (k != "VmRSS" && k != "VmHWM") {
			continue
		}
		n, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		if err != nil {
			return 0, 0, fmt.Errorf("/proc/%s/status: %s: %w", pid, k, err)
		}
		if k == "VmRSS" {
			rss = n * 1024
		} else {
			hwm = n * 1024
		}
	}
	return rss, hwm, sc.Err()
}

// Status reads the given fields of /proc/PID/status that are in kB (VmRSS,
// RssAnon, RssFile, ...), in bytes. A field the kernel does not report is absent
// from the map.
func Status(pid string, fields ...string) (map[string]uint64, error) {
	f, err := os.Open("/proc/" + pid + "/status")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := map[string]uint64{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok || !slices.Contains(fields, k) {
			continue
		}
		n, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("/proc/%s/status: %s: %w", pid, k, err)
		}
		out[k] = n * 1024
	}
	return out, sc.Err()
}
