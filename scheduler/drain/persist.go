// The controller's persistence: saving the state file, and auditing what a
// crash left behind (the records written after the last save) at start.

package drain

import (
	"fmt"
	"slices"
	"strings"

	"github.com/gpuwatch/gpuwatch/telemetry"
)

// recoverAudit audits what a crash left behind, and reports whether it wrote
// anything (New, before anyone else holds c): a torn last line of the audit
// log, and the records written after the last save (from byte saved on). The
// state as saved is the truth: a decision those records tell of and the saved
// state lacks was never acted on (the worker only acts on saved decisions) and
// is made again on the node's next reports; an actuation they tell of and the
// saved state still has pending is tried again, and the worker reads the
// scheduler's state first, so what took effect is not repeated. One recovery
// record per node they mention says what the log last said of it (From) and
// what it was restored to (To), so that replaying the log's transitions and
// recovery records gives the controller's state.
func (c *Controller) recoverAudit(saved int64) bool {
	a := c.audit
	wrote := false
	type seen struct {
		n     int
		last  string
		kinds []string
	}
	per := map[string]*seen{}
	var nodes []string
	others := 0
	switch {
	case a.opened < saved:
		c.record(AuditRecord{Event: "recovery", Outcome: OutcomeRecorded, Note: fmt.Sprintf(
			"the audit log has %d bytes, fewer than the %d it had when the state was saved: it was truncated or replaced outside gpuwatch",
			a.opened, saved)})
		wrote = true
	case a.opened > saved:
		_, err := scanAudit(a.path, saved, a.opened, func(r AuditRecord) {
			if r.Node == "" {
				others++
				return
			}
			sn := per[r.Node]
			if sn == nil {
				sn = &seen{}
				per[r.Node] = sn
				nodes = append(nodes, r.Node)
			}
			sn.n++
			what := r.Event
			switch r.Event {
			case "transition":
				sn.last = r.To
				what += " " + r.From + "→" + r.To
			default:
				if r.Action != "" {
					what += " " + r.Action
				}
				if r.Outcome != "" && r.Outcome != OutcomeRecorded {
					what += " (" + string(r.Outcome) + ")"
				}
			}
			if !slices.Contains(sn.kinds, what) {
				sn.kinds = append(sn.kinds, what)
			}
		})
		if err != nil {
			c.log.Error("drain: cannot read the audit log's records after the last save", "err", err)
		}
	}
	if a.torn > 0 {
		c.log.Warn("drain: the audit log ended in a torn line (a crash in the middle of a write); ended it, readers skip it", "bytes", a.torn)
		c.record(AuditRecord{Event: "recovery", Outcome: OutcomeRecorded, Note: fmt.Sprintf(
			"the audit log ended in a torn line of %d bytes, a write cut short by a crash: it was ended with a newline, and readers skip it", a.torn)})
		wrote = true
	}
	for _, node := range nodes {
		sn := per[node]
		restored := telemetry.StateHealthy
		note := ""
		if t := c.nodes[node]; t != nil {
			restored = t.State
			if t.Pending != nil {
				note = fmt.Sprintf("; %s pending: the scheduler's state is read before it is tried again, so what took effect is not repeated", t.Pending.label())
			}
		}
		c.log.Warn("drain: audit records after the last save: restored from the saved state", "node", node, "records", sn.n, "restored", restored)
		c.record(AuditRecord{Node: node, Event: "recovery", From: sn.last, To: restored.String(), Outcome: OutcomeRecorded, Note: fmt.Sprintf(
			"restart after a crash: %d audit records about %s were written after the last state save (%s); restored as %s from the saved state: a decision not saved is void (automation decides again on the node's next reports; a person asks again)%s",
			sn.n, node, strings.Join(sn.kinds, ", "), restored, note)})
		wrote = true
	}
	if others > 0 {
		c.record(AuditRecord{Event: "recovery", Outcome: OutcomeRecorded, Note: fmt.Sprintf(
			"restart after a crash: %d audit records about no one node (budget, clock) were written after the last state save; the saved state is restored", others)})
		wrote = true
	}
	return wrote
}

// saveLocked writes the state file atomically (c.mu held).
func (c *Controller) saveLocked() error {
	crashPoint("save")
	size := c.audit.size
	sf := stateFile{Version: stateVersion, Saved: c.now(), NextID: c.nextID, Nodes: c.nodes, Budget: c.budget, AuditSize: &size}
	data, err := jsonMarshal(sf)
	if err == nil {
		err = writeState(c.path, data)
	}
	if err != nil {
		err = fmt.Errorf("cannot save drain state: %w", err)
		if c.saveErr == nil {
			c.log.Error("drain: cannot save state", "err", err)
		}
		c.saveErr = err
		return err
	}
	c.saveErr, c.dirty = nil, false
	return nil
}
