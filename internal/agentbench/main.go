package main

import (
	"bufio"
	"fmt"
	"os"
	"runtime/metrics"
	"strconv"
	"strings"
)

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	var err error
	switch os.Args[1] {
	case "hour":
		err = runHour(os.Args[2:])
	case "process":
		err = runProcess(os.Args[2:])
	case "profshare":
		err = runProfShare(os.Stdin, os.Stdout)
	default:
		usage()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "agentbench:", err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: agentbench hour|process|profshare [flags] (see go doc ./internal/agentbench)")
	os.Exit(2)
}

const mib = 1 << 20

// procStatus reads the kB fields VmRSS and VmHWM of /proc/PID/status ("self" for
// this process), in bytes.
func procStatus(pid string) (rss, hwm uint64, err error) {
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

// heap reads the Go runtime's live heap (after the last GC) and the memory the
// runtime holds from the OS.
func heap() (live, total uint64) {
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}, {Name: "/memory/classes/total:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64(), s[1].Value.Uint64()
}
