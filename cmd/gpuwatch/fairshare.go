//go:build !agentonly

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"

	"github.com/gpuwatch/gpuwatch/scheduler/fairshare"
)

func runFairShare(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("fairshare", stderr)
	var cf clientFlags
	cf.register(fs)
	output := fs.String("output", "table", "table or json")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: gpuwatch fairshare --server URL [--output table|json]")
		fmt.Fprintln(stderr)
		fmt.Fprintln(stderr, "Prints the fair-share standing: accounts and users with their shares, measured and")
		fmt.Fprintln(stderr, "allocated GPU usage (decayed GPU-seconds), and their Fair Tree and classic factors.")
		fmt.Fprintln(stderr)
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *output != "table" && *output != "json" {
		return fmt.Errorf("%w: --output %q: want table or json", errUsage, *output)
	}
	c, err := cf.client()
	if err != nil {
		return err
	}
	var resp struct {
		Standing *fairshare.Standing `json:"standing"`
		Error    string              `json:"error,omitempty"`
	}
	if err := c.do(ctx, http.MethodGet, "/fairshare", nil, &resp); err != nil {
		return err
	}
	if resp.Standing == nil {
		return fmt.Errorf("gpuwatch server: no fair-share standing yet")
	}
	if *output == "json" {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(resp)
	}
	if err := resp.Standing.WriteTable(stdout); err != nil {
		return err
	}
	if resp.Error != "" {
		fmt.Fprintf(stdout, "\nwarning: the last interval was not read from the store: %s\n", resp.Error)
	}
	return nil
}
