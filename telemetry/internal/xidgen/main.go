// Command xidgen turns NVIDIA's Xid Catalog, exported as CSV sheets, into the Go
// table telemetry/xid_catalog_gen.go. It is run by go generate in package telemetry:
//
//	go run ./internal/xidgen -in testdata/xid-catalog -out xid_catalog_gen.go
//
// The output depends only on the sheets, so running it twice gives the same bytes.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/gpuwatch/gpuwatch/telemetry/internal/xidcat"
)

func main() {
	in := flag.String("in", "testdata/xid-catalog", "directory holding the catalog's CSV sheets")
	out := flag.String("out", "xid_catalog_gen.go", "Go file to write")
	flag.Parse()
	if err := run(*in, *out); err != nil {
		fmt.Fprintln(os.Stderr, "xidgen:", err)
		os.Exit(1)
	}
}

func run(in, out string) error {
	src, err := xidcat.Generate(in, filepath.ToSlash(in))
	if err != nil {
		return err
	}
	if err := os.WriteFile(out, src, 0o644); err != nil {
		return fmt.Errorf("cannot write generated catalog: %w", err)
	}
	return nil
}
