package slurm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
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
			n.Flags = parts[1:]
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

// Scontrol runs scontrol.
type Scontrol struct {
	// Path is the scontrol binary; "" looks it up in PATH.
	Path string
	// Timeout bounds one call (default 30 s; slurmctld may be slow to answer).
	Timeout time.Duration
}

func (s Scontrol) run(ctx context.Context, args ...string) (string, error) {
	path := s.Path
	if path == "" {
		p, err := exec.LookPath("scontrol")
		if err != nil {
			return "", fmt.Errorf("scontrol not found in PATH: %w", err)
		}
		path = p
	}
	timeout := s.Timeout
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(stderr.String())
		if msg == "" {
			msg = strings.TrimSpace(stdout.String())
		}
		return stdout.String(), fmt.Errorf("scontrol %s: %w: %s", strings.Join(args, " "), err, truncate(msg, 300))
	}
	return stdout.String(), nil
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
	if !Owned(reason) {
		return fmt.Errorf("drain %s: reason %q does not start with %q", node, reason, ReasonPrefix)
	}
	reason = strings.Join(strings.Fields(reason), " ")
	if len(reason) > maxReason {
		reason = reason[:maxReason]
	}
	_, err := s.run(ctx, "update", "NodeName="+node, "State=DRAIN", "Reason="+reason)
	return err
}

// Resume returns a drained node to service.
func (s Scontrol) Resume(ctx context.Context, node string) error {
	_, err := s.run(ctx, "update", "NodeName="+node, "State=RESUME")
	return err
}
