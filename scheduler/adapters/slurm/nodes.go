package slurm

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"
)

// Node state flags as Slurm prints them (scontrol's State=IDLE+DRAIN, the
// state_flags of sinfo --json).
const (
	FlagDrain           = "DRAIN"
	FlagRebootRequested = "REBOOT_REQUESTED"
	FlagRebootIssued    = "REBOOT_ISSUED"
	FlagNotResponding   = "NOT_RESPONDING"
	FlagCompleting      = "COMPLETING"
)

// Has reports whether the node carries the state flag.
func (n NodeState) Has(flag string) bool {
	for _, f := range n.Flags {
		if f == flag {
			return true
		}
	}
	return false
}

// busy reports whether jobs still run on the node.
func (n NodeState) busy() bool {
	return n.State == "ALLOCATED" || n.State == "MIXED" || n.State == "COMPLETING" || n.Has(FlagCompleting)
}

// Draining reports what sinfo calls "draining": drain set, jobs still running.
func (n NodeState) Draining() bool { return n.Drained() && n.busy() }

// DrainComplete reports what sinfo calls "drained": drain set and no job left,
// so the node may be rebooted or repaired.
func (n NodeState) DrainComplete() bool { return n.Drained() && !n.busy() }

// Down reports whether the node is DOWN (also while a reboot it was sent runs).
func (n NodeState) Down() bool { return n.State == "DOWN" }

// RebootPending reports whether a reboot was asked for and has not completed:
// requested (waiting for the node to be idle) or issued (RebootProgram ran).
func (n NodeState) RebootPending() bool {
	return n.Has(FlagRebootRequested) || n.Has(FlagRebootIssued)
}

// NotResponding reports whether slurmctld has lost contact with the node's slurmd.
func (n NodeState) NotResponding() bool { return n.Has(FlagNotResponding) }

// Node is one node as `sinfo --json` reports it: its state, reason and GPUs.
type Node struct {
	NodeState
	// ReasonUser and ReasonTime say who set Reason and when (zero when unset).
	ReasonUser string
	ReasonTime time.Time
	// Partitions the node is in.
	Partitions []string
	// CPUs configured and allocated.
	CPUs, AllocCPUs int
	// GRES is what the node is configured with ("gpu:h100:8"), GRESUsed what
	// jobs hold now, with device indices ("gpu:h100:3(IDX:0-2)").
	GRES, GRESUsed []GRES
	// BootTime is the machine's boot time as slurmd reports it; SlurmdStartTime
	// when slurmd last started.
	BootTime, SlurmdStartTime time.Time
}

// GPUs is the number of GPUs configured on the node.
func (n Node) GPUs() int { return gpuCount(n.GRES) }

// GPUsUsed is the number of GPUs jobs hold on the node.
func (n Node) GPUsUsed() int { return gpuCount(n.GRESUsed) }

// UsedGPUIndices are the indices of the GPUs jobs hold, sorted.
func (n Node) UsedGPUIndices() []int { return gpuIndices(n.GRESUsed) }

type sinfoJSON struct {
	Meta   jsonMeta   `json:"meta"`
	Errors jsonErrors `json:"errors"`
	Nodes  *[]struct {
		Name            string   `json:"name"`
		State           words    `json:"state"`
		StateFlags      []string `json:"state_flags"`
		Reason          string   `json:"reason"`
		ReasonSetByUser string   `json:"reason_set_by_user"`
		ReasonChangedAt number   `json:"reason_changed_at"`
		Partitions      []string `json:"partitions"`
		CPUs            number   `json:"cpus"`
		AllocCPUs       number   `json:"alloc_cpus"`
		GRES            string   `json:"gres"`
		GRESUsed        string   `json:"gres_used"`
		BootTime        number   `json:"boot_time"`
		SlurmdStartTime number   `json:"slurmd_start_time"`
	} `json:"nodes"`
}

// ParseSinfoJSON reads the output of `sinfo --json` into nodes sorted by name. A
// document whose "errors" list is not empty is an error of its own kind
// (*JSONError): Slurm 22.05 exits 0 that way when the controller is down.
func ParseSinfoJSON(b []byte) ([]Node, error) {
	const cmd = "sinfo --json"
	var doc sinfoJSON
	if err := strictJSON(b, &doc); err != nil {
		return nil, fmt.Errorf("%s: cannot parse output: %w", cmd, err)
	}
	if len(doc.Errors) > 0 {
		return nil, &JSONError{Command: cmd, Errors: doc.Errors.String()}
	}
	if doc.Nodes == nil {
		return nil, fmt.Errorf("%s: output has no \"nodes\" list", cmd)
	}
	byName := map[string]int{}
	var nodes []Node
	for i, raw := range *doc.Nodes {
		if raw.Name == "" {
			return nil, fmt.Errorf("%s: nodes[%d] has no name", cmd, i)
		}
		st := NodeState{Name: raw.Name}
		for j, w := range raw.State {
			w = strings.ToUpper(strings.TrimSpace(w))
			if j == 0 {
				st.State = w
			} else if w != "" {
				st.Flags = append(st.Flags, w)
			}
		}
		if st.State == "" {
			return nil, fmt.Errorf("%s: node %s has no state", cmd, raw.Name)
		}
		for _, f := range raw.StateFlags {
			if f = strings.ToUpper(strings.TrimSpace(f)); f != "" && !st.Has(f) {
				st.Flags = append(st.Flags, f)
			}
		}
		st.Reason = raw.Reason
		if st.Reason == "none" || st.Reason == "(null)" {
			st.Reason = ""
		}
		gres, err := ParseGRES(raw.GRES)
		if err != nil {
			return nil, fmt.Errorf("%s: node %s: %w", cmd, raw.Name, err)
		}
		used, err := ParseGRES(raw.GRESUsed)
		if err != nil {
			return nil, fmt.Errorf("%s: node %s: used %w", cmd, raw.Name, err)
		}
		n := Node{
			NodeState:  st,
			Partitions: raw.Partitions,
			CPUs:       int(raw.CPUs.Value), AllocCPUs: int(raw.AllocCPUs.Value),
			GRES: gres, GRESUsed: used,
			BootTime: raw.BootTime.time(), SlurmdStartTime: raw.SlurmdStartTime.time(),
		}
		if st.Reason != "" {
			n.ReasonUser = raw.ReasonSetByUser
			n.ReasonTime = raw.ReasonChangedAt.time()
		}
		if j, dup := byName[n.Name]; dup {
			// A node listed once per partition: keep one, with every partition.
			for _, p := range n.Partitions {
				if !contains(nodes[j].Partitions, p) {
					nodes[j].Partitions = append(nodes[j].Partitions, p)
				}
			}
			continue
		}
		byName[n.Name] = len(nodes)
		nodes = append(nodes, n)
	}
	sort.Slice(nodes, func(i, j int) bool { return nodes[i].Name < nodes[j].Name })
	return nodes, nil
}

func contains(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}

// JSONError is a Slurm JSON answer whose "errors" list is not empty.
type JSONError struct {
	Command string
	Errors  string
}

func (e *JSONError) Error() string { return e.Command + ": slurm reported: " + e.Errors }

// strictJSON decodes one JSON document and refuses trailing data.
func strictJSON(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return fmt.Errorf("data after the JSON document")
	}
	return nil
}

// jsonCommand runs a command printing JSON and parses it with parse. A
// *JSONError from parse (the command exited 0 but reported errors) becomes a
// *CommandError classified like a failed command.
func jsonCommand[T any](ctx context.Context, s Scontrol, parse func([]byte) (T, error), name string, args ...string) (T, error) {
	var zero T
	out, err := s.exec(ctx, name, args...)
	if err != nil {
		return zero, err
	}
	v, err := parse([]byte(out))
	if je, ok := err.(*JSONError); ok {
		return zero, s.classify(ctx, commandLine(name, args), je.Errors, nil)
	}
	return v, err
}

// Nodes lists every node with its state flags, reason and GPUs (configured, in
// use, and the indices in use), from `sinfo --json`.
func (s Scontrol) Nodes(ctx context.Context) ([]Node, error) {
	return jsonCommand(ctx, s, ParseSinfoJSON, "sinfo", "--json")
}

// Reboot asks Slurm to reboot the node as soon as its jobs end and then return
// it to service: `scontrol reboot ASAP nextstate=RESUME reason=… NODE`. ASAP
// drains the node at once (no new jobs) and keeps the reason, which must carry
// ReasonPrefix. Until the reboot is issued the node shows REBOOT_REQUESTED
// (sinfo's "@"); then REBOOT_ISSUED and DOWN while RebootProgram runs, with
// " : reboot issued" appended to the reason. When slurmd registers after the
// reboot, Slurm clears the DRAIN flag and the reason (nextstate=RESUME), so
// gpuwatch's reason does not survive a completed reboot; a node that does not
// come back within ResumeTimeout goes DOWN with "reboot timed out".
func (s Scontrol) Reboot(ctx context.Context, node, reason string) error {
	return s.RebootNext(ctx, node, reason, "RESUME")
}

// RebootNext is Reboot with the state the node takes when it is back: RESUME
// (in service at once) or DOWN (out of service, keeping the reason with
// " : reboot issued : reboot complete" appended, until someone resumes it: what
// the drain controller uses, so that probation gates the node's return).
func (s Scontrol) RebootNext(ctx context.Context, node, reason, next string) error {
	reason, err := ownedReason("reboot", node, reason)
	if err != nil {
		return err
	}
	if next != "RESUME" && next != "DOWN" {
		return fmt.Errorf("reboot %s: next state %q: want RESUME or DOWN", node, next)
	}
	_, err = s.run(ctx, "reboot", "ASAP", "nextstate="+next, "reason="+reason, node)
	return err
}

// CancelReboot cancels a reboot that was requested and not yet issued
// (`scontrol cancel_reboot NODE`). Slurm 22.05 also clears the drain and the
// reason that Reboot's ASAP set, so the node takes jobs again; Drain it again to
// keep it out.
func (s Scontrol) CancelReboot(ctx context.Context, node string) error {
	if err := checkNodeName(node); err != nil {
		return err
	}
	_, err := s.run(ctx, "cancel_reboot", node)
	return err
}

// ownedReason checks and normalises a reason gpuwatch sets on a node.
func ownedReason(action, node, reason string) (string, error) {
	if err := checkNodeName(node); err != nil {
		return "", err
	}
	if !Owned(reason) {
		return "", fmt.Errorf("%s %s: reason %q does not start with %q", action, node, reason, ReasonPrefix)
	}
	reason = strings.Join(strings.Fields(reason), " ")
	if len(reason) > maxReason {
		reason = reason[:maxReason]
	}
	return reason, nil
}

// checkNodeName refuses what scontrol would read as something else than one node
// (an empty name, "ALL", options, lists, key=value).
func checkNodeName(node string) error {
	if node == "" || strings.EqualFold(node, "ALL") || strings.HasPrefix(node, "-") || strings.ContainsAny(node, " \t\n=,[]") {
		return fmt.Errorf("node name %q: want one node's name", node)
	}
	return nil
}
