//go:build !agentonly

package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/gpuwatch/gpuwatch/analyzer/report"
)

// progressAfter is the window from which a report on a terminal shows a
// progress bar.
const progressAfter = 24 * time.Hour

func runReport(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("report", stderr)
	var cf clientFlags
	cf.register(fs)
	var win windowFlags
	win.register(fs, "24h")
	by := fs.String("by", "account", "group by account, user, job, namespace, node or model")
	output := fs.String("output", "table", "table, csv, json, markdown or html (one self-contained file)")
	idleBelow := fs.String("idle-below", "5%", "activity under which an allocated GPU is idle (5% or 0.05)")
	idleFor := fs.Duration("idle-for", 30*time.Minute, "how long a GPU must stay under --idle-below to count as idle")
	step := fs.Duration("step", 0, "resolution (default: the agents' 10 s interval; coarser is faster over long windows)")
	var accounts, users, namespaces csvList
	fs.Var(&accounts, "account", "only the allocations of these accounts (comma-separated or repeated; exact, as the report's rows show them)")
	fs.Var(&users, "user", "only the allocations of these users (comma-separated or repeated)")
	fs.Var(&namespaces, "namespace", "only the allocations of these namespaces (comma-separated or repeated; (none) for Slurm jobs)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: gpuwatch report --server URL [--from T --to T | --last D] [--by account|user|job|namespace|node|model]")
		fmt.Fprintln(stderr, "                      [--output table|csv|json|markdown|html] [--idle-below 5%] [--idle-for 30m]")
		fmt.Fprintln(stderr, "                      [--account A[,B]] [--user U[,V]] [--namespace N[,M]]")
		fmt.Fprintln(stderr)
		fmt.Fprintln(stderr, "Prints a GPU utilization report from the gpuwatch server's store: per group, GPU-hours allocated and")
		fmt.Fprintln(stderr, "measured (DCGM SM activity where profiling runs, else utilization), efficiency, idle allocated hours,")
		fmt.Fprintln(stderr, "memory headroom, top idle jobs, the change against the previous period and the fair-share standing.")
		fmt.Fprintln(stderr, "How samples are weighted and gaps counted: docs/reports.md. Example:")
		fmt.Fprintln(stderr, "  gpuwatch report --server http://gpuwatch:9402 --last 168h --by account --output html > week.html")
		fmt.Fprintln(stderr, "  gpuwatch report --server http://gpuwatch:9402 --last 168h --by user --account nlp,vision")
		fmt.Fprintln(stderr)
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	format, err := report.ParseFormat(*output)
	if err != nil {
		return fmt.Errorf("%w: --output: %v", errUsage, err)
	}
	v := url.Values{}
	if err := win.set(v); err != nil {
		return err
	}
	v.Set(report.ParamBy, *by)
	v.Set(report.ParamIdleBelow, *idleBelow)
	v.Set(report.ParamIdleFor, idleFor.String())
	if *step != 0 {
		v.Set(report.ParamStep, step.String())
	}
	for param, l := range map[string]csvList{report.ParamAccount: accounts, report.ParamUser: users, report.ParamNamespace: namespaces} {
		if len(l) > 0 {
			v[param] = l
		}
	}
	// The server checks the same; checking here first names the flag.
	opts, err := report.ParseQueryAs(v, time.Now(), func(p string) string { return "--" + strings.ReplaceAll(p, "_", "-") })
	if err != nil {
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	c, err := cf.client()
	if err != nil {
		return err
	}
	bar := format == report.FormatTable && isTerminal(stderr) && opts.To.Sub(opts.From) >= progressAfter
	rep, err := fetchReport(ctx, c, v, bar, stderr)
	if err != nil {
		return err
	}
	return report.Render(stdout, rep, format)
}

// csvList is a repeatable flag of comma-separated values; an empty value
// ("a,,b", a trailing comma) is kept for the report's check to name.
type csvList []string

func (l *csvList) String() string { return strings.Join(*l, ",") }

func (l *csvList) Set(s string) error {
	*l = append(*l, strings.Split(s, ",")...)
	return nil
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// fetchReport asks the server for the report; with bar it asks for progress
// lines and draws them on stderr.
func fetchReport(ctx context.Context, c *apiClient, v url.Values, bar bool, stderr io.Writer) (*report.Report, error) {
	if bar {
		v.Set(report.ParamProgress, "1")
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+"/report?"+v.Encode(), nil)
	if err != nil {
		return nil, err
	}
	hc := *c.http
	hc.Timeout = 0 // a long window takes what it takes; ^C cancels
	resp, err := hc.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, fmt.Errorf("cannot reach the gpuwatch server at %s (%v): check --server and that the server runs", strings.TrimSuffix(c.base, "/api/gpuwatch/v1"), err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		data, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		var e struct {
			Error string `json:"error"`
		}
		if json.Unmarshal(data, &e) == nil && e.Error != "" {
			return nil, errors.New(e.Error)
		}
		return nil, fmt.Errorf("gpuwatch server: %s: %s", resp.Status, strings.TrimSpace(string(data)))
	}
	if !bar {
		var rep report.Report
		if err := json.NewDecoder(resp.Body).Decode(&rep); err != nil {
			return nil, fmt.Errorf("gpuwatch server: the report is not the expected JSON: %w", err)
		}
		return &rep, nil
	}
	defer fmt.Fprint(stderr, "\r\033[K")
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 1<<20), 256<<20)
	for sc.Scan() {
		var line struct {
			Progress *struct{ Done, Total int } `json:"progress"`
			Report   *report.Report             `json:"report"`
			Error    string                     `json:"error"`
		}
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			return nil, fmt.Errorf("gpuwatch server: a progress line is not the expected JSON: %w", err)
		}
		switch {
		case line.Error != "":
			return nil, errors.New(line.Error)
		case line.Report != nil:
			return line.Report, nil
		case line.Progress != nil:
			fmt.Fprint(stderr, "\r"+progressBar(line.Progress.Done, line.Progress.Total, 40))
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("gpuwatch server: reading the report: %w", err)
	}
	return nil, errors.New("gpuwatch server: the answer ended before the report")
}

// progressBar draws "[#####·····]  12/40 chunks read" in width cells.
func progressBar(done, total, width int) string {
	if total <= 0 {
		total = 1
	}
	n := min(width, done*width/total)
	return "[" + strings.Repeat("#", n) + strings.Repeat("·", width-n) + fmt.Sprintf("] %d/%d chunks read", done, total)
}
