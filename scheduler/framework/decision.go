package framework

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/gpuwatch/gpuwatch/telemetry"
)

// Outcome is how a decision ended.
type Outcome string

// Outcomes.
const (
	OutcomePlaced        Outcome = "placed"        // the whole gang has GPUs
	OutcomeUnschedulable Outcome = "unschedulable" // the gang does not fit now
	OutcomeInvalid       Outcome = "invalid"       // the request is malformed
)

// Decision records one placement: what was asked, what was chosen, how good it is,
// and why every recorded candidate passed or failed.
type Decision struct {
	ID      string    `json:"id"`
	At      time.Time `json:"at"`
	DryRun  bool      `json:"dry_run"`
	Outcome Outcome   `json:"outcome"`
	// Reason says why the gang was not placed.
	Reason  string  `json:"reason,omitempty"`
	Request Request `json:"request"`
	// Assignments are the chosen GPUs, one entry per node, in gang rank order.
	Assignments []Assignment `json:"assignments,omitempty"`
	Quality     *Quality     `json:"quality,omitempty"`
	// Tier and Domain are the smallest topology domain the gang was placed in.
	Tier   telemetry.Tier `json:"tier,omitzero"`
	Domain string         `json:"domain,omitempty"`
	// Reservation is the lease holding the GPUs (reserve mode only).
	Reservation *Lease `json:"reservation,omitempty"`
	// Evaluated nodes went through the pipeline; Feasible ones passed every filter
	// and the picker.
	Evaluated int `json:"evaluated"`
	Feasible  int `json:"feasible"`
	// Rejections counts the rejected nodes by plugin and reason, most first.
	Rejections []Rejection `json:"rejections,omitempty"`
	// Candidates are the recorded nodes: the chosen ones and the best runners-up, or
	// every evaluated node when the request asked to Explain.
	Candidates []NodeResult `json:"candidates,omitempty"`
	// Notes are things worth knowing: stale telemetry used, preference missed.
	Notes      []string  `json:"notes,omitempty"`
	SnapshotAt time.Time `json:"snapshot_at"`
	Duration   Duration  `json:"duration"`
}

// Assignment is one node's part of a gang.
type Assignment struct {
	Node      string   `json:"node"`
	GPUs      []int    `json:"gpus"` // NVML indexes, in rank order (by rail)
	UUIDs     []string `json:"uuids,omitempty"`
	Rails     []int    `json:"rails,omitempty"` // rail of each GPU, -1 unknown
	Milli     int      `json:"milli"`           // per GPU
	Exclusive bool     `json:"exclusive,omitempty"`
	Score     float64  `json:"score"`
}

// Lease is a reservation: GPUs held until Expires or until released.
type Lease struct {
	ID      string    `json:"id"`
	Expires time.Time `json:"expires"`
}

// Quality measures a placement.
type Quality struct {
	GPUs  int `json:"gpus"`
	Nodes int `json:"nodes"`
	// LeavesSpanned counts the leaf switches under the gang (telemetry.Hierarchy's
	// LeavesSpanned: a node with an unknown leaf counts as its own).
	LeavesSpanned int `json:"leaves_spanned"`
	// LCATier is the lowest tier every node of the gang shares.
	LCATier telemetry.Tier `json:"lca_tier"`
	// NVLinkDomainsSpanned counts NVLink domains (a node outside any counts as its
	// own).
	NVLinkDomainsSpanned int `json:"nvlink_domains_spanned"`
	// RailAlignment is the share of ranks (GPU positions in rank order) whose GPUs
	// sit on the same rail on every node, counted only over GPUs with known rails; 1
	// for a single node whose GPUs all have distinct rails. RailAligned is
	// RailAlignment == 1.
	RailAlignment float64 `json:"rail_alignment"`
	RailAligned   bool    `json:"rail_aligned"`
	// WorstLink is the worst GPU↔GPU link inside any node of the gang ("" for
	// one-GPU parts or unknown topology).
	WorstLink telemetry.LinkType `json:"worst_link,omitempty"`
	// FragmentationLeft is the free share of the chosen nodes' capacity after the
	// placement: capacity stranded on nodes this gang made partly used (0 when it
	// fills them).
	FragmentationLeft float64 `json:"fragmentation_left"`
	// PreferredMet is false when the gang spans more than Request.Preferred.
	PreferredMet bool `json:"preferred_met"`
}

// Rejection counts nodes one plugin rejected for one reason.
type Rejection struct {
	Plugin   string   `json:"plugin"`
	Reason   string   `json:"reason"`
	Nodes    int      `json:"nodes"`
	Examples []string `json:"examples,omitempty"` // up to three node names
}

// NodeResult is one candidate node's evaluation.
type NodeResult struct {
	Node     string        `json:"node"`
	Feasible bool          `json:"feasible"`
	Chosen   bool          `json:"chosen"`
	Verdicts []Verdict     `json:"verdicts"`
	Scores   []ScoreRecord `json:"scores,omitempty"`
	// Total is the weighted mean of the scores, in [0,1].
	Total float64 `json:"total"`
	// GPUs the picker chose (NVML indexes).
	GPUs []int `json:"gpus,omitempty"`
}

// Verdict is one filter's (or the picker's) status for a node.
type Verdict struct {
	Plugin string `json:"plugin"`
	Status
}

// ScoreRecord is one scorer's score for a node.
type ScoreRecord struct {
	Plugin string  `json:"plugin"`
	Score  float64 `json:"score"`
	Weight float64 `json:"weight"`
	Reason string  `json:"reason,omitempty"`
}

// ExplainJSON renders the decision as indented JSON.
func ExplainJSON(d *Decision) ([]byte, error) {
	b, err := json.MarshalIndent(d, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("cannot render decision %s as JSON: %w", d.ID, err)
	}
	return b, nil
}

// Explain renders the decision for humans: the request, the outcome, the chosen GPUs
// with their quality, the rejections by reason, and every recorded candidate with its
// verdicts and scores.
func Explain(d *Decision) string {
	var b strings.Builder
	mode := "reserve"
	if d.DryRun {
		mode = "dry run"
	}
	fmt.Fprintf(&b, "decision %s at %s (%s): %s", d.ID, d.At.UTC().Format(time.RFC3339Nano), mode, d.Outcome)
	if d.Reason != "" {
		fmt.Fprintf(&b, ": %s", d.Reason)
	}
	b.WriteString("\n")
	fmt.Fprintf(&b, "request: %s\n", describeRequest(&d.Request))
	fmt.Fprintf(&b, "evaluated %d nodes, %d feasible, in %v (snapshot of %s)\n",
		d.Evaluated, d.Feasible, time.Duration(d.Duration), d.SnapshotAt.UTC().Format(time.RFC3339))
	if d.Reservation != nil {
		fmt.Fprintf(&b, "reservation %s until %s\n", d.Reservation.ID, d.Reservation.Expires.UTC().Format(time.RFC3339))
	}
	if q := d.Quality; q != nil {
		fmt.Fprintf(&b, "placed in %s %q: %d GPUs on %d nodes; leaves spanned %d, lowest common tier %s, NVLink domains %d, rail alignment %.2f, worst link %s, fragmentation left %.2f",
			d.Tier, d.Domain, q.GPUs, q.Nodes, q.LeavesSpanned, q.LCATier, q.NVLinkDomainsSpanned, q.RailAlignment, orDash(string(q.WorstLink)), q.FragmentationLeft)
		if !q.PreferredMet {
			b.WriteString(" (preferred tier missed)")
		}
		b.WriteString("\n")
		for i, a := range d.Assignments {
			fmt.Fprintf(&b, "  %d. %s gpus %v", i+1, a.Node, a.GPUs)
			if len(a.Rails) > 0 {
				fmt.Fprintf(&b, " rails %v", a.Rails)
			}
			if a.Milli < 1000 {
				fmt.Fprintf(&b, " %d milli each", a.Milli)
			}
			if a.Exclusive {
				b.WriteString(" exclusive")
			}
			fmt.Fprintf(&b, " score %.3f\n", a.Score)
		}
	}
	for _, n := range d.Notes {
		fmt.Fprintf(&b, "note: %s\n", n)
	}
	if len(d.Rejections) > 0 {
		b.WriteString("rejected:\n")
		for _, r := range d.Rejections {
			fmt.Fprintf(&b, "  %5d nodes  %s: %s", r.Nodes, r.Plugin, r.Reason)
			if len(r.Examples) > 0 {
				fmt.Fprintf(&b, " (e.g. %s)", strings.Join(r.Examples, ", "))
			}
			b.WriteString("\n")
		}
	}
	if len(d.Candidates) > 0 {
		b.WriteString("candidates:\n")
		cands := make([]NodeResult, len(d.Candidates))
		copy(cands, d.Candidates)
		sort.SliceStable(cands, func(i, j int) bool {
			if cands[i].Feasible != cands[j].Feasible {
				return cands[i].Feasible
			}
			return cands[i].Total > cands[j].Total
		})
		for _, c := range cands {
			mark := " "
			if c.Chosen {
				mark = "*"
			}
			state := "rejected"
			if c.Feasible {
				state = fmt.Sprintf("score %.3f", c.Total)
			}
			fmt.Fprintf(&b, " %s %s: %s", mark, c.Node, state)
			if len(c.GPUs) > 0 {
				fmt.Fprintf(&b, " gpus %v", c.GPUs)
			}
			b.WriteString("\n")
			for _, v := range c.Verdicts {
				fmt.Fprintf(&b, "      filter %-13s %s\n", v.Plugin, v.Status)
			}
			for _, s := range c.Scores {
				fmt.Fprintf(&b, "      score  %-13s %.3f ×%g", s.Plugin, s.Score, s.Weight)
				if s.Reason != "" {
					fmt.Fprintf(&b, "  (%s)", s.Reason)
				}
				b.WriteString("\n")
			}
		}
	}
	return b.String()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func describeRequest(r *Request) string {
	var parts []string
	if r.JobID != "" {
		parts = append(parts, "job "+r.JobID)
	}
	if r.Fixed() {
		parts = append(parts, fmt.Sprintf("%d nodes × %d GPUs", r.Nodes, r.GPUsPerNode))
	} else {
		parts = append(parts, fmt.Sprintf("%d GPUs", r.GPUs))
	}
	if r.Milli > 0 && r.Milli < 1000 {
		parts = append(parts, fmt.Sprintf("%d milli each", r.Milli))
	}
	if r.Model != "" {
		parts = append(parts, "model "+r.Model)
	}
	if r.MinMemoryMiB > 0 {
		parts = append(parts, fmt.Sprintf("≥ %d MiB", r.MinMemoryMiB))
	}
	if r.Required != telemetry.TierUnknown && r.Required != telemetry.TierCluster {
		parts = append(parts, "within one "+r.Required.String())
	}
	if r.Preferred != telemetry.TierUnknown && r.Preferred < r.Required {
		parts = append(parts, "preferably within one "+r.Preferred.String())
	}
	if r.Exclusive {
		parts = append(parts, "exclusive nodes")
	}
	if len(r.Near) > 0 {
		parts = append(parts, "near "+strings.Join(r.Near, ","))
	}
	if r.RequireFresh {
		parts = append(parts, "fresh health only")
	}
	return strings.Join(parts, ", ")
}
