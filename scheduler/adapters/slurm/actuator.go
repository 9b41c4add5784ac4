package slurm

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/gpuwatch/gpuwatch/scheduler/drain"
)

// Actuator is the drain controller's hand on a Slurm cluster, through scontrol:
// drain (State=DRAIN, running jobs finish), resume, reboot ASAP with
// nextstate=DOWN, requeue of the jobs on a node, and a read of the node's
// drain state and reason. It implements drain.Actuator and drain.Evacuator.
//
// Reboots return the node DOWN, still carrying gpuwatch's reason, rather than
// RESUME: with nextstate=RESUME Slurm puts a rebooted node back in service
// before anyone has seen its GPUs healthy again, and the controller's
// probation could not gate it (Slurm 22.05 clears the reason and the drain on
// return). gpuwatch resumes the node once its agent has reported healthy for
// the probation period.
//
// Slurm cannot drain one GPU of a node: a GPU-scoped fault drains the whole
// node (the policy may instead exclude the GPU from gpuwatch's own placements
// only, mode exclude-gpu). A command slurmctld refused (an unknown node, a
// permission) is permanent for the controller; an unreachable controller is
// retried until it answers.
type Actuator struct {
	Scontrol Scontrol
}

var (
	_ drain.Actuator  = Actuator{}
	_ drain.Evacuator = Actuator{}
)

func actuatorError(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, ErrRejected) {
		return drain.Permanent(err)
	}
	return err
}

// Drain drains the node. Automatic drains carry gpuwatch's reason; a person's
// drain (gpuwatch drain --reason) carries theirs as given.
func (a Actuator) Drain(ctx context.Context, node, reason string) error {
	if err := checkNodeName(node); err != nil {
		return drain.Permanent(err)
	}
	reason = strings.Join(strings.Fields(reason), " ")
	if reason == "" {
		return drain.Permanent(fmt.Errorf("drain %s: a reason is needed", node))
	}
	_, err := a.Scontrol.run(ctx, "update", "NodeName="+node, "State=DRAIN", "Reason="+truncate(reason, maxReason))
	return actuatorError(err)
}

// Resume returns the node to service.
func (a Actuator) Resume(ctx context.Context, node string) error {
	return actuatorError(a.Scontrol.Resume(ctx, node))
}

// Reboot asks Slurm to reboot the node as soon as its jobs end; the node is
// drained with reason until then and DOWN with it after.
func (a Actuator) Reboot(ctx context.Context, node, reason string) error {
	err := a.Scontrol.RebootNext(ctx, node, reason, "DOWN")
	if err != nil && !errors.Is(err, ErrRejected) && !errors.Is(err, ErrUnreachable) {
		return drain.Permanent(err) // a bad reason or node name: our bug, not the cluster's
	}
	return actuatorError(err)
}

// State reads whether the node is draining or drained and its reason.
func (a Actuator) State(ctx context.Context, node string) (bool, string, error) {
	n, err := a.Scontrol.ShowNode(ctx, node)
	if err != nil {
		return false, "", actuatorError(err)
	}
	held, reason := heldReason(n)
	return held, reason, nil
}

// heldReason says whether a node is out of service on purpose, and why.
func heldReason(n NodeState) (bool, string) {
	reason := n.Reason
	if i := strings.Index(reason, " : reboot "); i >= 0 {
		reason = reason[:i] // " : reboot issued", " : reboot complete" appended by slurmctld
	}
	// DOWN with a reason is out of service on purpose (a completed reboot held
	// for probation, or an admin's); DOWN without one is a node not responding.
	held := n.Drained() || n.RebootPending() || (n.State == "DOWN" && reason != "")
	return held, reason
}

var _ drain.Lister = Actuator{}

// OwnedDrains lists the nodes held out of service with a reason gpuwatch's
// automation wrote (drain.ReasonPrefix), from one `sinfo --json`, for a
// server that takes over. Slurm keeps no mark of who set a reason, so a
// person's drain set through gpuwatch (ManualDrain) cannot be told from an
// administrator's and is not listed: automation leaves both alone.
func (a Actuator) OwnedDrains(ctx context.Context) ([]drain.OwnedDrain, error) {
	nodes, err := a.Scontrol.Nodes(ctx)
	if err != nil {
		return nil, actuatorError(err)
	}
	var out []drain.OwnedDrain
	for _, n := range nodes {
		held, reason := heldReason(n.NodeState)
		if !held || !drain.Owned(reason) {
			continue
		}
		out = append(out, drain.OwnedDrain{Node: n.Name, Reason: reason, Since: n.ReasonTime,
			Reboot: n.RebootPending()})
	}
	return out, nil
}

// Evacuate requeues the node's jobs (policy mode requeue): each job id in work
// goes back to the queue. A job that already ended is not an error.
func (a Actuator) Evacuate(ctx context.Context, node string, work []string) error {
	var errs []error
	for _, id := range work {
		if id == "" || strings.ContainsAny(id, " \t\n=") {
			continue
		}
		if _, err := a.Scontrol.run(ctx, "requeue", id); err != nil {
			var ce *CommandError
			if errors.As(err, &ce) && strings.Contains(strings.ToLower(ce.Error()), "invalid job id") {
				continue // gone already
			}
			errs = append(errs, fmt.Errorf("requeue job %s on %s: %w", id, node, err))
		}
	}
	return errors.Join(errs...)
}
