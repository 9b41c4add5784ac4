package drain

import (
	"context"
	"errors"
	"fmt"
	"github.com/gpuwatch/gpuwatch/telemetry/healthreport"
	"io"
	"slices"
	"strings"
	"sync"
	"unicode"

	"github.com/gpuwatch/gpuwatch/telemetry"
)

// ReasonPrefix starts every reason automation sets: the same prefix as the Slurm
// adapter's ReasonPrefix and the agent's healthreport.SummaryPrefix, so `gpuwatch check`,
// the controller and an admin reading sinfo agree on what gpuwatch owns.
const ReasonPrefix = healthreport.SummaryPrefix

// Owned reports whether a drain reason is one gpuwatch's automation set.
func Owned(reason string) bool { return strings.HasPrefix(strings.TrimSpace(reason), ReasonPrefix) }

// MaxReason is the longest reason the controller hands an actuator, in bytes.
const MaxReason = 200

// maxUser is the longest user name a manual request stores, in bytes.
const maxUser = 100

// Actuator is the scheduler-side hand of the controller: Slurm (scontrol) or
// Kubernetes (cordon, taint, condition). The controller calls it from one worker
// goroutine, never from Observe, and never calls two methods for the same node at
// once.
//
// Contract:
//   - Drain stops new work landing on the node and records reason where an admin
//     sees it (Slurm Reason=, a Kubernetes annotation and node condition). An
//     automatic drain's reason starts with ReasonPrefix; a ManualDrain's does not,
//     and an implementation must accept both. Draining a node that is already
//     drained with the same reason is not an error.
//   - Resume undoes a drain: the controller calls it only after State said the
//     node is drained with an owned reason, or for ManualResume.
//   - Reboot drains the node at once and reboots it as soon as it is idle. It
//     should keep the node out of service, with reason, when it is back (Slurm:
//     scontrol reboot ASAP nextstate=DOWN), so that the controller resumes it
//     after probation; State must report it drained with reason until then. An
//     actuator that returns the node to service by itself still works: the
//     controller re-asserts a drain if the fault persists (VerifyInterval).
//   - State reads whether the node is drained (or draining) and the reason it
//     carries, "" when there is none. It must not change anything: the controller
//     calls it before every Drain, Reboot and Resume so that a retry or a restart
//     never repeats an action that took effect.
//
// An error is retried with back-off until the call is accepted, unless it wraps
// ErrPermanent.
type Actuator interface {
	Drain(ctx context.Context, node, reason string) error
	Resume(ctx context.Context, node string) error
	Reboot(ctx context.Context, node, reason string) error
	State(ctx context.Context, node string) (drained bool, reason string, err error)
}

// Evacuator is implemented by actuators that can stop running work on a drained node
// (modes drain and requeue). work names the workloads to stop, as the attribution
// source names them: "namespace/pod" for Kubernetes, job ids for Slurm. Stopping work
// that is already gone is not an error; work blocked by a disruption budget is an
// error to retry.
type Evacuator interface {
	Evacuate(ctx context.Context, node string, work []string) error
}

// ErrPermanent marks an actuator error that retrying cannot fix (the node does not
// exist in the scheduler, a permission is missing). The controller stops retrying,
// audits the action as failed and holds the node until someone acts.
var ErrPermanent = errors.New("permanent")

// Permanent wraps err so that the controller does not retry it.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%w: %w", ErrPermanent, err)
}

// FormatReason writes the owned reason for a drain caused by c, in the format of
// healthreport.Report.Summary:
//
//	gpuwatch: xid79 gpu=GPU-5c3f… action=RESTART_BM
//	gpuwatch: ib-down port=mlx5_3/1 action=CHECK_MECHANICALS +2 more
//
// more is how many other conditions back the same decision.
func FormatReason(c telemetry.Condition, more int) string {
	var b strings.Builder
	b.WriteString(ReasonPrefix + " " + conditionName(c))
	switch c.Target.Scope {
	case telemetry.ScopeGPU, telemetry.ScopeNVLink:
		b.WriteString(" gpu=")
		if c.GPUUUID != "" {
			b.WriteString(c.GPUUUID)
		} else {
			fmt.Fprintf(&b, "%d", c.Target.GPU)
		}
		if c.Target.Scope == telemetry.ScopeNVLink {
			fmt.Fprintf(&b, " link=%d", c.Target.Link)
		}
	case telemetry.ScopeIBPort:
		fmt.Fprintf(&b, " port=%s/%d", c.Target.IBDevice, c.Target.IBPort)
	case telemetry.ScopeNVSwitch:
		fmt.Fprintf(&b, " nvswitch=%d", c.Target.NVSwitch)
	}
	if c.Action != telemetry.ActionNone {
		b.WriteString(" action=" + string(c.Action))
	}
	tail := ""
	if more > 0 {
		tail = fmt.Sprintf(" +%d more", more)
	}
	return cut(sanitize(b.String()), MaxReason-len(tail)) + tail
}

// conditionName is "xid79" for an Xid, else the condition kind.
func conditionName(c telemetry.Condition) string {
	if c.Kind == telemetry.ConditionXid && c.Evidence["xid"] != "" {
		return "xid" + c.Evidence["xid"]
	}
	return string(c.Kind)
}

// sanitize makes s one line of printable, valid UTF-8: invalid bytes become
// U+FFFD, runs of blanks, line breaks (also U+2028, U+0085) and control
// characters one space, and format characters (bidi overrides, zero-width
// spaces: text that reads differently from what it is) are dropped. Reasons and
// user names go to the audit log, the state file, Slurm's Reason= and
// Kubernetes annotations as they come out of here.
func sanitize(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	s = strings.Map(func(r rune) rune {
		if unicode.Is(unicode.Cf, r) {
			return -1
		}
		return r
	}, s)
	return strings.Join(strings.FieldsFunc(s, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }), " ")
}

// CheckNodeName reports whether node can name one node to an actuator: a
// gpuwatch node name (telemetry.ParseNodeID: printable ASCII without blanks,
// quotes or '/'), at most 253 bytes (a DNS name), and nothing a scheduler
// would read as something else: no Slurm host list (',', '[', ']'), no
// key=value, no leading '-' (an option), not ALL.
func CheckNodeName(node string) error {
	if _, err := telemetry.ParseNodeID(node); err != nil {
		return err
	}
	switch {
	case len(node) > maxNodeName:
		return fmt.Errorf("invalid node name %.40q…: longer than %d bytes", node, maxNodeName)
	case strings.ContainsAny(node, ",[]="):
		return fmt.Errorf("invalid node name %q: ',', '[', ']' and '=' are host list and key=value syntax", node)
	case strings.HasPrefix(node, "-"):
		return fmt.Errorf("invalid node name %q: starts with '-'", node)
	case strings.EqualFold(node, "ALL"):
		return fmt.Errorf("invalid node name %q: Slurm reads it as every node", node)
	}
	return nil
}

// maxNodeName is the longest node name accepted (a DNS name's limit).
const maxNodeName = 253

// clean is sanitize, cut to at most n bytes.
func clean(s string, n int) string { return strings.TrimSpace(cut(sanitize(s), n)) }

func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && n < len(s) && s[n]&0xC0 == 0x80 {
		n-- // do not split a UTF-8 sequence
	}
	return s[:n]
}

// LogActuator does nothing but write what it would do, one line per call, to W, and
// remembers which nodes it drained so State answers like a scheduler would. It is
// what `gpuwatch demo` and `--actuator log` use. OnCall gives each call, typed, to
// a callback too (the demo's live output).
type LogActuator struct {
	mu      sync.Mutex
	w       io.Writer
	drained map[string]string
	onCall  func(LogCall)
}

// LogCall is one call a LogActuator took.
type LogCall struct {
	Action string   // drain, reboot, resume or evacuate
	Node   string   // as the controller named it
	Reason string   // drain and reboot
	Work   []string // evacuate: the work it would stop, sorted
}

// String is the line the LogActuator writes for the call ("drain node-07
// reason=…").
func (c LogCall) String() string {
	switch c.Action {
	case "drain":
		return fmt.Sprintf("drain %s reason=%q", c.Node, c.Reason)
	case "reboot":
		return fmt.Sprintf("reboot %s reason=%q (then resume)", c.Node, c.Reason)
	case "evacuate":
		return fmt.Sprintf("evacuate %s work=%s", c.Node, strings.Join(c.Work, ","))
	}
	return c.Action + " " + c.Node
}

// NewLogActuator returns a LogActuator writing to w.
func NewLogActuator(w io.Writer) *LogActuator {
	return &LogActuator{w: w, drained: map[string]string{}}
}

// OnCall makes the LogActuator call f with every call it takes, after writing
// its line (under the actuator's lock: f must not call the actuator). Set it
// before the controller runs.
func (a *LogActuator) OnCall(f func(LogCall)) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.onCall = f
}

// took writes the call's line and tells OnCall's callback (a.mu held).
func (a *LogActuator) took(c LogCall) error {
	_, err := fmt.Fprintln(a.w, c.String())
	if a.onCall != nil {
		a.onCall(c)
	}
	if err != nil {
		return fmt.Errorf("log actuator: %w", err)
	}
	return nil
}

// Drain writes "drain NODE reason=…".
func (a *LogActuator) Drain(_ context.Context, node, reason string) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.drained[node] = reason
	return a.took(LogCall{Action: "drain", Node: node, Reason: reason})
}

// Reboot writes "reboot NODE reason=…"; the node counts as drained until Resume.
func (a *LogActuator) Reboot(_ context.Context, node, reason string) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.drained[node] = reason
	return a.took(LogCall{Action: "reboot", Node: node, Reason: reason})
}

// Resume writes "resume NODE".
func (a *LogActuator) Resume(_ context.Context, node string) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.drained, node)
	return a.took(LogCall{Action: "resume", Node: node})
}

// Evacuate writes "evacuate NODE work=…".
func (a *LogActuator) Evacuate(_ context.Context, node string, work []string) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	w := slices.Clone(work)
	slices.Sort(w)
	return a.took(LogCall{Action: "evacuate", Node: node, Work: w})
}

// State answers from what the LogActuator was told.
func (a *LogActuator) State(_ context.Context, node string) (bool, string, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	r, ok := a.drained[node]
	return ok, r, nil
}
