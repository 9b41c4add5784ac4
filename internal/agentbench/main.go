package main

import (
	"fmt"
	"os"
	"runtime/metrics"
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

// heap reads the Go runtime's live heap (after the last GC) and the memory the
// runtime holds from the OS.
func heap() (live, total uint64) {
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}, {Name: "/memory/classes/total:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64(), s[1].Value.Uint64()
}
