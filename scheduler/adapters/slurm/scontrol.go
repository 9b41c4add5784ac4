package slurm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// ReasonPrefix starts every reason gpuwatch sets; a drain whose reason does not
// start with it belongs to someone else and gpuwatch never resumes it.
const ReasonPrefix = "gpuwatch:"

// Owned reports whether a node's reason is one gpuwatch set.
func Owned(reason string) bool { return strings.HasPrefix(strings.TrimSpace(reason), ReasonPrefix) }

// maxReason bounds a reason: slurmctld keeps reasons in a fixed buffer and sinfo
// shows the first few dozen characters; NHC keeps them short too.
const maxReason = 200

// NodeState is what scontrol says about one node.
type NodeState struct {
	Name string
	// State is the base state (IDLE, MIXED, ALLOCATED, DOWN, ...), Flags the
	// "+"-separated flags after it (DRAIN, COMPLETING, NOT_RESPONDING, ...).
	State string
	Flags []string
	// Reason is the reason text without the "[user@time]" slurmctld appends.
	Reason string
}

// Drained reports whether the node is draining or drained.
func (n NodeState) Drained() bool {
	if n.State == "DRAINED" || n.State == "DRAINING" || n.State == "DRAIN" {
		return true
	}
	for _, f := range n.Flags {
		if f == "DRAIN" {
			return true
		}
	}
	return false
}

// ParseShowNode reads the output of `scontrol show node NAME` (one-line or the
// default multi-line form) for one node.
func ParseShowNode(out string) (NodeState, error) {
	var n NodeState
	s := strings.Join(strings.Fields(strings.ReplaceAll(out, "\n", " ")), " ")
	if s == "" {
		return n, errors.New("scontrol show node: empty output")
	}
	// Reason runs to the end of the record or to the next key slurm prints after
	// it in the multi-line form.
	if i := strings.Index(s, " Reason="); i >= 0 {
		r := s[i+len(" Reason="):]
		for _, next := range []string{" Comment=", " Extra=", " Partitions=", " BootTime=", " LastBusyTime=", " ResumeAfterTime=", " CfgTRES="} {
			if j := strings.Index(r, next); j >= 0 {
				r = r[:j]
			}
		}
		if j := strings.LastIndex(r, " ["); j >= 0 && strings.HasSuffix(r, "]") {
			r = r[:j]
		}
		n.Reason = strings.TrimSpace(r)
		s = s[:i]
	}
	for _, tok := range strings.Fields(s) {
		k, v, ok := strings.Cut(tok, "=")
		if !ok {
			continue
		}
		switch k {
		case "NodeName":
			n.Name = v
		case "State":
			parts := strings.Split(v, "+")
			n.State = parts[0]
			if len(parts) > 1 {
				n.Flags = parts[1:]
			}
		}
	}
	switch {
	case n.Name == "":
		return n, fmt.Errorf("scontrol show node: no NodeName= in %q", truncate(out, 120))
	case n.State == "":
		return n, fmt.Errorf("scontrol show node %s: no State= in %q", n.Name, truncate(out, 120))
	}
	if n.Reason == "none" || n.Reason == "(null)" {
		n.Reason = ""
	}
	return n, nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// Scontrol runs Slurm's commands: scontrol, and for Nodes, RunningJobs,
// PendingJobs and SiteFactors also sinfo, squeue and sprio. They talk to the
// controller that SLURM_CONF (from the environment, or Env) names, as a site's
// tools do. The zero value uses PATH and the process environment.
type Scontrol struct {
	// Path is the scontrol binary; "" looks it up in PATH. When it is set,
	// sinfo, squeue and sprio are taken from the same directory.
	Path string
	// Timeout bounds one command (default 30 s; slurmctld may be slow to answer,
	// and a client gives up on an unreachable one after about MessageTimeout).
	// A command that runs out of time fails with ErrUnreachable.
	Timeout time.Duration
	// Env is added to the process environment of every command, later entries
	// winning, e.g. "SLURM_CONF=/etc/slurm/other.conf".
	Env []string
}

func (s Scontrol) binary(name string) (string, error) {
	if s.Path != "" {
		if name == "scontrol" {
			return s.Path, nil
		}
		return filepath.Join(filepath.Dir(s.Path), name), nil
	}
	p, err := exec.LookPath(name)
	if err != nil {
		return "", fmt.Errorf("%s not found in PATH: %w", name, err)
	}
	return p, nil
}

// exec runs one command and returns its standard output. A failure the command
// reports is a *CommandError, classified by classify; a binary that is missing
// or a ctx cancelled by the caller is a plain error.
func (s Scontrol) exec(ctx context.Context, name string, args ...string) (string, error) {
	stdout, stderr, timeout, err := s.raw(ctx, name, args...)
	if err == nil {
		return stdout, nil
	}
	line := commandLine(name, args)
	var exitErr *exec.ExitError
	switch {
	case ctx.Err() != nil:
		return "", fmt.Errorf("%s: %w", line, ctx.Err())
	case errors.Is(err, context.DeadlineExceeded):
		return "", &CommandError{Command: line, Message: "no answer within " + timeout.String(), Unreachable: true, Err: err}
	case !errors.As(err, &exitErr):
		return "", fmt.Errorf("%s: %w", line, err)
	}
	msg := strings.TrimSpace(stderr)
	if msg == "" {
		msg = strings.TrimSpace(stdout)
	}
	return stdout, s.classify(ctx, line, truncate(msg, 300), err)
}

// raw runs one command under Timeout. A command killed for running out of time
// fails with an error matching context.DeadlineExceeded.
func (s Scontrol) raw(ctx context.Context, name string, args ...string) (stdout, stderr string, timeout time.Duration, err error) {
	timeout = s.Timeout
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	path, err := s.binary(name)
	if err != nil {
		return "", "", timeout, err
	}
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var out, errOut bytes.Buffer
	cmd := exec.CommandContext(cctx, path, args...)
	if len(s.Env) > 0 {
		cmd.Env = append(os.Environ(), s.Env...)
	}
	cmd.Stdout, cmd.Stderr = &out, &errOut
	// Do not wait long for output pipes a killed command's children may hold.
	cmd.WaitDelay = time.Second
	err = cmd.Run()
	if err != nil && cctx.Err() != nil {
		err = fmt.Errorf("%w: %v", cctx.Err(), err)
	}
	return out.String(), errOut.String(), timeout, err
}

// classify builds the error of a command that failed saying msg: unreachable when
// msg says so or `scontrol ping` finds no controller up, rejected otherwise.
func (s Scontrol) classify(ctx context.Context, line, msg string, cause error) *CommandError {
	e := &CommandError{Command: line, Message: msg, Err: cause}
	if saysUnreachable(msg) {
		e.Unreachable = true
		return e
	}
	out, _, _, err := s.raw(ctx, "scontrol", "ping")
	if pingSaysDown(out) || errors.Is(err, context.DeadlineExceeded) {
		e.Unreachable = true
	}
	return e
}

func commandLine(name string, args []string) string {
	return truncate(name+" "+strings.Join(args, " "), 200)
}

func (s Scontrol) run(ctx context.Context, args ...string) (string, error) {
	return s.exec(ctx, "scontrol", args...)
}

// ShowNode reads one node's state and reason.
func (s Scontrol) ShowNode(ctx context.Context, node string) (NodeState, error) {
	out, err := s.run(ctx, "show", "node", node, "--oneliner")
	if err != nil {
		return NodeState{}, err
	}
	return ParseShowNode(out)
}

// Drain drains the node with the reason, which must carry ReasonPrefix; it is cut to
// the length slurmctld keeps. Running jobs finish; the node takes no new ones.
func (s Scontrol) Drain(ctx context.Context, node, reason string) error {
	reason, err := ownedReason("drain", node, reason)
	if err != nil {
		return err
	}
	_, err = s.run(ctx, "update", "NodeName="+node, "State=DRAIN", "Reason="+reason)
	return err
}

// Resume returns a drained node to service.
func (s Scontrol) Resume(ctx context.Context, node string) error {
	if err := checkNodeName(node); err != nil {
		return err
	}
	_, err := s.run(ctx, "update", "NodeName="+node, "State=RESUME")
	return err
}
