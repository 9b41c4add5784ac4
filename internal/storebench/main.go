package main

import (
	"fmt"
	"os"
)

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	var err error
	func() {
		defer func() {
			if r := recover(); r != nil {
				f, ok := r.(benchFailure)
				if !ok {
					panic(r)
				}
				err = fmt.Errorf("%s", string(f))
			}
		}()
		switch os.Args[1] {
		case "series":
			err = runSeries(os.Args[2:])
		case "ingest":
			err = runIngest(os.Args[2:])
		case "sustain":
			err = runSustain(os.Args[2:])
		case "query":
			err = runQuery(os.Args[2:])
		case "disk":
			err = runDisk(os.Args[2:])
		default:
			usage()
		}
	}()
	if err != nil {
		fmt.Fprintln(os.Stderr, "storebench:", err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: storebench series|ingest|sustain|query|disk [flags] (see go doc ./internal/storebench)")
	os.Exit(2)
}

const mib = 1 << 20
