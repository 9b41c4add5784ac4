// Command gen writes gpuwatch's Grafana dashboards (dashboards/internal/defs)
// as JSON into the dashboards directory: `go generate ./dashboards/` runs it
// there. Files of a dashboard that no longer exists are removed.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/gpuwatch/gpuwatch/dashboards/internal/defs"
)

func main() {
	dir := flag.String("dir", ".", "directory to write the dashboards' JSON into")
	flag.Parse()
	if err := run(*dir); err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}

func run(dir string) error {
	files, err := defs.All()
	if err != nil {
		return err
	}
	keep := map[string]bool{}
	for _, f := range files {
		keep[f.Name] = true
		if err := os.WriteFile(filepath.Join(dir, f.Name), f.JSON, 0o644); err != nil {
			return err
		}
	}
	old, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return err
	}
	for _, p := range old {
		if !keep[filepath.Base(p)] {
			if err := os.Remove(p); err != nil {
				return err
			}
		}
	}
	return nil
}
