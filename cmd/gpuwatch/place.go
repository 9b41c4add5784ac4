//go:build !agentonly

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/gpuwatch/gpuwatch/scheduler/framework"
	"github.com/gpuwatch/gpuwatch/scheduler/placement/service"
	"github.com/gpuwatch/gpuwatch/telemetry"
)

// runPlace is `gpuwatch place --server URL --gpus N [flags]`.
func runPlace(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("place", stderr)
	var cf clientFlags
	cf.register(fs)
	gpus := fs.Int("gpus", 0, "GPUs of the gang, placed all or nothing (required)")
	perNode := fs.Int("gpus-per-node", 0, "fixed shape: this many GPUs on every node (0: any split, fewest nodes)")
	milli := fs.Int("milli", 0, "share of each GPU in milli-GPU, 1..1000 (0: whole GPUs)")
	model := fs.String("model", "", `GPU model, matched as a case-insensitive substring ("h100")`)
	minMem := fs.Int64("min-memory-mib", 0, "smallest GPU memory in MiB")
	tier := fs.String("tier", "", "highest topology tier the gang may span: node, nvlink_domain, leaf, spine, block (default: anywhere)")
	prefer := fs.String("prefer", "", "tier the gang should stay within if it can (default: --tier)")
	exclusive := fs.Bool("exclusive", false, "whole nodes only, nothing else on them")
	fresh := fs.Bool("require-fresh", false, "reject GPUs whose health report is stale instead of trusting their last known state")
	dryRun := fs.Bool("dry-run", false, "decide where the gang would go and hold nothing")
	lease := fs.Duration("lease", 0, "how long a reservation holds the GPUs (default: the server's, 5m)")
	job := fs.String("job", "", "job id: the reservation ends when the store shows this job allocated")
	output := fs.String("output", "text", "text or json")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: gpuwatch place --server URL --gpus N [--gpus-per-node G] [--model M] [--dry-run] [--lease 10m] [--output json]")
		fmt.Fprintln(stderr)
		fmt.Fprintln(stderr, "Asks the gpuwatch server where a gang of GPUs goes (topology, health and load aware) and, unless")
		fmt.Fprintln(stderr, "--dry-run, reserves them under a lease. Prints the decision id, the nodes and GPUs, the leaves")
		fmt.Fprintln(stderr, "spanned; `gpuwatch explain ID` says why. Exits 1 when the gang does not fit now.")
		fmt.Fprintln(stderr)
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *gpus < 1 {
		return fmt.Errorf("%w: --gpus %d: want the number of GPUs, at least 1", errUsage, *gpus)
	}
	if *output != "text" && *output != "json" {
		return fmt.Errorf("%w: --output %q: want text or json", errUsage, *output)
	}
	if *lease < 0 {
		return fmt.Errorf("%w: --lease %v: want a positive duration", errUsage, *lease)
	}
	if *dryRun && *lease != 0 {
		return fmt.Errorf("%w: --lease with --dry-run: a dry run holds nothing", errUsage)
	}
	req := service.PlaceRequest{DryRun: *dryRun, Request: framework.Request{JobID: *job, GPUs: *gpus, GPUsPerNode: *perNode,
		Milli: *milli, Model: *model, MinMemoryMiB: *minMem, Exclusive: *exclusive, RequireFresh: *fresh, Lease: framework.Duration(*lease)}}
	for _, t := range []struct {
		flag, v string
		dst     *telemetry.Tier
	}{{"tier", *tier, &req.Required}, {"prefer", *prefer, &req.Preferred}} {
		if t.v == "" {
			continue
		}
		v, err := telemetry.ParseTier(t.v)
		if err != nil {
			return fmt.Errorf("%w: --%s: %v", errUsage, t.flag, err)
		}
		*t.dst = v
	}
	c, err := cf.client()
	if err != nil {
		return err
	}
	var d service.PlaceResponse
	if err := c.do(ctx, http.MethodPost, "/place", req, &d); err != nil {
		return err
	}
	if *output == "json" {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(d); err != nil {
			return err
		}
	} else {
		printDecision(stdout, &d, cf.server)
	}
	if d.Outcome != framework.OutcomePlaced {
		return exitCode(1)
	}
	return nil
}

func printDecision(w io.Writer, d *service.PlaceResponse, server string) {
	mode := "reserved"
	if d.DryRun {
		mode = "dry run"
	}
	fmt.Fprintf(w, "decision %s: %s (%s)", d.ID, d.Outcome, mode)
	if d.Reason != "" {
		fmt.Fprintf(w, ": %s", d.Reason)
	}
	fmt.Fprintln(w)
	if q := d.Quality; q != nil {
		fmt.Fprintf(w, "%d GPUs on %d nodes in %s %q: leaves spanned %d, lowest common tier %s, NVLink domains %d, rail alignment %.2f, fragmentation left %.2f\n",
			q.GPUs, q.Nodes, d.Tier, d.Domain, q.LeavesSpanned, q.LCATier, q.NVLinkDomainsSpanned, q.RailAlignment, q.FragmentationLeft)
		if !q.PreferredMet {
			fmt.Fprintln(w, "preferred tier missed")
		}
	}
	for _, a := range d.Assignments {
		fmt.Fprintf(w, "  %s  gpus %s", a.Node, joinInts(a.GPUs))
		if len(a.Rails) > 0 {
			fmt.Fprintf(w, "  rails %s", joinInts(a.Rails))
		}
		if a.Milli > 0 && a.Milli < 1000 {
			fmt.Fprintf(w, "  %d milli each", a.Milli)
		}
		if len(a.UUIDs) > 0 {
			fmt.Fprintf(w, "  %s", strings.Join(a.UUIDs, ","))
		}
		fmt.Fprintln(w)
	}
	if r := d.Reservation; r != nil {
		fmt.Fprintf(w, "reservation %s held until %s\n", r.ID, r.Expires.Local().Format(time.RFC3339))
	}
	for _, n := range d.Notes {
		fmt.Fprintf(w, "note: %s\n", n)
	}
	fmt.Fprintf(w, "evaluated %d nodes, %d feasible; why: gpuwatch explain --server %s %s\n", d.Evaluated, d.Feasible, server, d.ID)
}

func joinInts(v []int) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = fmt.Sprint(x)
	}
	return strings.Join(s, ",")
}

// runExplain is `gpuwatch explain --server URL ID`.
func runExplain(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("explain", stderr)
	var cf clientFlags
	cf.register(fs)
	output := fs.String("output", "text", "text or json (the whole decision record)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: gpuwatch explain --server URL ID")
		fmt.Fprintln(stderr)
		fmt.Fprintln(stderr, "Prints why placement decision ID went where it went: the request, the chosen GPUs and their")
		fmt.Fprintln(stderr, "quality, the rejected nodes by reason, and each recorded candidate's verdicts and scores.")
		fmt.Fprintln(stderr)
		fs.PrintDefaults()
	}
	id, err := parseOneArg(fs, args, "decision")
	if err != nil {
		return err
	}
	if id == "" {
		fs.Usage()
		return fmt.Errorf("%w: which decision? (gpuwatch explain --server URL ID, the id gpuwatch place printed)", errUsage)
	}
	if *output != "text" && *output != "json" {
		return fmt.Errorf("%w: --output %q: want text or json", errUsage, *output)
	}
	c, err := cf.client()
	if err != nil {
		return err
	}
	accept := "text/plain"
	if *output == "json" {
		accept = "application/json"
	}
	body, err := c.getRaw(ctx, "/explain/"+url.PathEscape(id), accept)
	if err != nil {
		return err
	}
	_, err = stdout.Write(body)
	return err
}

// getRaw GETs path and returns the body as is; an error status becomes an
// error carrying the server's message.
func (c *apiClient) getRaw(ctx context.Context, path, accept string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+path, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", accept)
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("gpuwatch server: %w", err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return nil, fmt.Errorf("gpuwatch server: reading the answer: %w", err)
	}
	if resp.StatusCode/100 != 2 {
		var e struct {
			Error string `json:"error"`
		}
		if json.Unmarshal(data, &e) == nil && e.Error != "" {
			return nil, fmt.Errorf("gpuwatch server GET %s: %s", path, e.Error)
		}
		return nil, fmt.Errorf("gpuwatch server GET %s: %s: %s", path, resp.Status, strings.TrimSpace(string(data)))
	}
	return data, nil
}
