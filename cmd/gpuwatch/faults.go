//go:build !agentonly

package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/gpuwatch/gpuwatch/analyzer/faults"
)

func runFaults(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("faults", stderr)
	var cf clientFlags
	cf.register(fs)
	var win windowFlags
	win.register(fs, "168h")
	output := fs.String("output", "table", "table, json or csv (one row per number: section,key,field,value)")
	lemonCount := fs.Int("lemon-count", 3, "drains of one node within --lemon-window that make it a lemon")
	lemonWindow := fs.Duration("lemon-window", 7*24*time.Hour, "the window --lemon-count drains must fall within")
	top := fs.Int("top", 20, "rows of the ranked lists (drain soon, InfiniBand ports, NVLink links)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: gpuwatch faults --server URL [--last D | --from T --to T] [--output table|json|csv]")
		fmt.Fprintln(stderr, "                      [--lemon-count 3] [--lemon-window 168h] [--top 20]")
		fmt.Fprintln(stderr)
		fmt.Fprintln(stderr, "Prints fault analytics from the gpuwatch server's store and drain audit log: Xid counts by code,")
		fmt.Fprintln(stderr, "catalog action, GPU model and node; health conditions raised by kind; mean time between failures")
		fmt.Fprintln(stderr, "per node and GPU model (a failure is an Xid whose catalog action is RESET_GPU or stronger, or a drain;")
		fmt.Fprintln(stderr, "those within 10 minutes on one node are one); lemon nodes (repeated drains); GPUs whose retired")
		fmt.Fprintln(stderr, "pages (limit 60) or uncorrectable remapped rows (limit 512) grow toward the limit; InfiniBand ports")
		fmt.Fprintln(stderr, "by flaps and symbol errors; NVLink links by CRC and replay errors. Definitions: docs/faults-report.md.")
		fmt.Fprintln(stderr, "Example:")
		fmt.Fprintln(stderr, "  gpuwatch faults --server http://gpuwatch:9402 --last 720h --lemon-count 3 --lemon-window 168h")
		fmt.Fprintln(stderr)
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	format, err := faults.ParseFormat(*output)
	if err != nil {
		return fmt.Errorf("%w: --output: %v", errUsage, err)
	}
	v := url.Values{}
	if err := win.set(v); err != nil {
		return err
	}
	v.Set(faults.ParamLemonCount, strconv.Itoa(*lemonCount))
	v.Set(faults.ParamLemonWindow, lemonWindow.String())
	v.Set(faults.ParamTop, strconv.Itoa(*top))
	// The server checks the same; checking here first names the flag.
	if _, err := faults.ParseQuery(v, time.Now(), func(p string) string { return "--" + strings.ReplaceAll(p, "_", "-") }); err != nil {
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	c, err := cf.client()
	if err != nil {
		return err
	}
	c.http.Timeout = 0 // a long window takes what it takes; ^C cancels
	var rep faults.Report
	if err := c.do(ctx, http.MethodGet, "/faults?"+v.Encode(), nil, &rep); err != nil {
		return err
	}
	return faults.Render(stdout, &rep, format)
}
