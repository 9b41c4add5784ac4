//go:build !agentonly

package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os/user"
	"strings"
)

// runDrain is `gpuwatch drain --server URL NODE --reason TEXT`.
func runDrain(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return manualAction(ctx, "drain", args, stdout, stderr)
}

// runResume is `gpuwatch resume --server URL NODE`.
func runResume(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return manualAction(ctx, "resume", args, stdout, stderr)
}

func manualAction(ctx context.Context, verb string, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet(verb, stderr)
	var cf clientFlags
	cf.register(fs)
	reason := fs.String("reason", "", "why (required for drain): shown in sinfo / on the node, and in the audit log")
	who := fs.String("user", "", "who is acting, for the audit log (default: the login name)")
	output := fs.String("output", "text", "text or json")
	fs.Usage = func() {
		if verb == "drain" {
			fmt.Fprintln(stderr, "Usage: gpuwatch drain --server URL NODE --reason TEXT")
			fmt.Fprintln(stderr)
			fmt.Fprintln(stderr, "Drains NODE through the server's actuator (Slurm, Kubernetes) as a person: audited like an")
			fmt.Fprintln(stderr, "automatic drain, not counted in the safety budget, and never resumed by automation.")
		} else {
			fmt.Fprintln(stderr, "Usage: gpuwatch resume --server URL NODE")
			fmt.Fprintln(stderr)
			fmt.Fprintln(stderr, "Resumes NODE through the server's actuator as a person, audited. Conditions active now are")
			fmt.Fprintln(stderr, "acknowledged: automation does not drain the node again for them until they clear.")
		}
		fmt.Fprintln(stderr)
		fs.PrintDefaults()
	}
	node, err := parseOneArg(fs, args, "node")
	if err != nil {
		return err
	}
	if node == "" {
		fs.Usage()
		return fmt.Errorf("%w: which node? (gpuwatch %s --server URL NODE)", errUsage, verb)
	}
	if verb == "drain" && strings.TrimSpace(*reason) == "" {
		return fmt.Errorf("%w: --reason is required: say why, for whoever reads sinfo or the audit log", errUsage)
	}
	if *output != "text" && *output != "json" {
		return fmt.Errorf("%w: --output %q: want text or json", errUsage, *output)
	}
	if *who == "" {
		if u, err := user.Current(); err == nil {
			*who = u.Username
		}
	}
	c, err := cf.client()
	if err != nil {
		return err
	}
	var status map[string]any
	body := map[string]string{"node": node, "reason": *reason, "user": *who}
	if err := c.do(ctx, http.MethodPost, "/"+verb, body, &status); err != nil {
		return err
	}
	if *output == "json" {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(status)
	}
	state, _ := status["state"].(string)
	if verb == "drain" {
		fmt.Fprintf(stdout, "%s: drain requested by %s (%q); state %s\n", node, *who, *reason, state)
	} else {
		fmt.Fprintf(stdout, "%s: resume requested by %s; state %s\n", node, *who, state)
	}
	return nil
}

// parseOneArg parses flags around one positional argument (before, after or
// between them) and returns it ("" when there is none).
func parseOneArg(fs *flag.FlagSet, args []string, what string) (string, error) {
	var arg string
	rest := args
	for {
		if err := fs.Parse(rest); err != nil {
			return "", usageErr(err)
		}
		if fs.NArg() == 0 {
			return arg, nil
		}
		if arg != "" {
			return "", fmt.Errorf("%w: one %s at a time: got %q and %q", errUsage, what, arg, fs.Arg(0))
		}
		arg, rest = fs.Arg(0), fs.Args()[1:]
	}
}

func usageErr(err error) error {
	if err == nil {
		return nil
	}
	if strings.Contains(err.Error(), "help requested") {
		return err
	}
	return fmt.Errorf("%w: %v", errUsage, err)
}
