package fairshare

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// Number is a float64 that JSON-encodes +Inf as "inf" (as sshare prints it)
// and NaN as null; finite values are plain numbers.
type Number float64

// MarshalJSON implements json.Marshaler.
func (n Number) MarshalJSON() ([]byte, error) {
	f := float64(n)
	switch {
	case math.IsNaN(f):
		return []byte("null"), nil
	case math.IsInf(f, 1):
		return []byte(`"inf"`), nil
	case math.IsInf(f, -1):
		return []byte(`"-inf"`), nil
	}
	return strconv.AppendFloat(nil, f, 'g', -1, 64), nil
}

// UnmarshalJSON reads what MarshalJSON writes.
func (n *Number) UnmarshalJSON(b []byte) error {
	switch string(b) {
	case "null":
		*n = Number(math.NaN())
		return nil
	case `"inf"`:
		*n = Number(math.Inf(1))
		return nil
	case `"-inf"`:
		*n = Number(math.Inf(-1))
		return nil
	}
	var f float64
	if err := json.Unmarshal(b, &f); err != nil {
		return fmt.Errorf("number %s: want a number, \"inf\" or null", b)
	}
	*n = Number(f)
	return nil
}

// Standing is the fair-share report: every association's shares, usage and
// factors. It is what `gpuwatch fairshare --output json` and the server's API
// print, and what the metrics collector exports.
type Standing struct {
	GeneratedAt time.Time `json:"generated_at"`
	// LastInput is the ledger's newest input.
	LastInput time.Time `json:"last_input"`
	// Algorithm is the factor the scheduler is fed (both are reported).
	Algorithm       Algorithm    `json:"algorithm"`
	Charge          ChargePolicy `json:"charge"`
	BlendWeight     float64      `json:"blend_weight,omitempty"`
	IdleFloor       float64      `json:"idle_floor"`
	HalfLifeSeconds float64      `json:"half_life_seconds"`
	// Fallback: charged usage is allocation-based because the ledger was
	// stale; FallbackReason says why.
	Fallback       bool   `json:"fallback"`
	FallbackReason string `json:"fallback_reason,omitempty"`
	// Users is the number of user associations (Fair Tree's N).
	Users int `json:"users"`
	// Associations in tree order: root, then each account followed by its
	// users and sub-accounts.
	Associations []StandingRow `json:"associations"`
	// Unattributed is usage charged to associations the tree does not have;
	// it takes part in no factor.
	Unattributed []UnattributedUsage `json:"unattributed,omitempty"`
}

// StandingRow is one association of the report. Usage is decayed GPU-seconds.
type StandingRow struct {
	Account string `json:"account"`
	User    string `json:"user,omitempty"`
	Parent  string `json:"parent,omitempty"`
	Depth   int    `json:"depth"`
	// SharesRaw is the configured shares (a number or "parent").
	SharesRaw Shares `json:"shares_raw"`
	// SharesNormalized is the classic normalized share of the whole machine.
	SharesNormalized float64 `json:"shares_normalized"`
	// SharesLevel is the share among siblings (Fair Tree's S).
	SharesLevel float64 `json:"shares_level"`
	// Measured, allocated and charged usage, summed over the subtree.
	UsageMeasured   float64 `json:"usage_measured_gpu_seconds"`
	UsageAllocated  float64 `json:"usage_allocated_gpu_seconds"`
	UsageUnmeasured float64 `json:"usage_unmeasured_gpu_seconds"`
	UsageCharged    float64 `json:"usage_charged_gpu_seconds"`
	// UsageNormalized is charged usage over the whole tree's.
	UsageNormalized float64 `json:"usage_normalized"`
	// UsageEffective is the classic effective usage.
	UsageEffective float64 `json:"usage_effective"`
	// ClassicFactor is 2^(-UE/S/d); null for root.
	ClassicFactor Number `json:"classic_factor"`
	// LevelFS is Fair Tree's S/U among siblings ("inf" with no usage).
	LevelFS Number `json:"level_fs"`
	// FairTreeFactor is rank/users, users only.
	FairTreeFactor Number `json:"fair_tree_factor"`
	FairTreeRank   int    `json:"fair_tree_rank,omitempty"`
	// Fallback: some of this row's charged usage is allocation-based, because
	// the ledger was stale or samples had no activity measurement.
	Fallback bool `json:"fallback"`
}

// UnattributedUsage is usage of an association the tree lacks.
type UnattributedUsage struct {
	Account string `json:"account"`
	User    string `json:"user"`
	UsageEntry
}

// StandingOptions configures NewStanding.
type StandingOptions struct {
	Algorithm Algorithm // default FairTree
	Dampening float64   // classic d; 0 means 1
	// Now stamps the report; zero means the usage's time.
	Now time.Time
}

// NewStanding computes the factors of the tree from the usage and builds the
// report. A fallback usage (AllocationFallback) is flagged on every row; pass
// the staleness error as reason, or nil.
func NewStanding(t *Tree, u Usage, staleness error, opts StandingOptions) *Standing {
	alg := opts.Algorithm
	if alg == "" {
		alg = FairTree
	}
	f := ComputeFactors(t, u.Charged(), FactorOptions{Dampening: opts.Dampening})
	s := &Standing{GeneratedAt: opts.Now, LastInput: u.LastInput, Algorithm: alg, Charge: u.Policy.Charge,
		IdleFloor: u.Policy.IdleFloor, HalfLifeSeconds: u.HalfLife.Seconds(), Fallback: u.Fallback, Users: t.NumUsers()}
	if s.GeneratedAt.IsZero() {
		s.GeneratedAt = u.At
	}
	if u.Policy.Charge == ChargeBlend {
		s.BlendWeight = u.Policy.BlendWeight
	}
	if u.Fallback {
		s.FallbackReason = "ledger stale: charged usage is allocation-based"
		if staleness != nil {
			s.FallbackReason = staleness.Error() + "; charged usage is allocation-based"
		}
	}
	// Sum the ledger's measured/allocated/unmeasured up the tree.
	sums := make([]UsageEntry, len(t.nodes))
	for i := len(t.nodes) - 1; i >= 0; i-- {
		n := &t.nodes[i]
		if n.user {
			e := u.Entries[Assoc{Account: n.account, User: n.name}]
			sums[i].Measured += e.Measured
			sums[i].Allocated += e.Allocated
			sums[i].Unmeasured += e.Unmeasured
		}
		if n.parent >= 0 {
			sums[n.parent].Measured += sums[i].Measured
			sums[n.parent].Allocated += sums[i].Allocated
			sums[n.parent].Unmeasured += sums[i].Unmeasured
		}
	}
	for i, r := range f.Rows {
		row := StandingRow{
			Account: r.Account, User: r.User, Parent: r.Parent, Depth: r.Depth, SharesRaw: r.Shares,
			SharesNormalized: r.SharesNorm, SharesLevel: r.SharesLevel,
			UsageMeasured: sums[i].Measured, UsageAllocated: sums[i].Allocated, UsageUnmeasured: sums[i].Unmeasured,
			UsageCharged: r.UsageRaw, UsageNormalized: r.UsageNorm, UsageEffective: r.UsageEffective,
			ClassicFactor: Number(r.ClassicFactor), LevelFS: Number(r.LevelFS),
			FairTreeFactor: Number(r.FairTreeFactor), FairTreeRank: r.FairTreeRank,
			Fallback: u.Fallback || sums[i].Unmeasured > 0,
		}
		if i == 0 {
			row.ClassicFactor = Number(math.NaN())
		}
		s.Associations = append(s.Associations, row)
	}
	for a, e := range u.Entries {
		if a.User == "" || !t.Has(a) {
			s.Unattributed = append(s.Unattributed, UnattributedUsage{Account: a.Account, User: a.User, UsageEntry: e})
		}
	}
	sort.Slice(s.Unattributed, func(i, j int) bool {
		a, b := s.Unattributed[i], s.Unattributed[j]
		return a.Account < b.Account || a.Account == b.Account && a.User < b.User
	})
	return s
}

// Factor is the factor of the report's algorithm for a row (NaN for accounts
// under Fair Tree and for root).
func (s *Standing) Factor(r StandingRow) float64 {
	if s.Algorithm == Classic {
		return float64(r.ClassicFactor)
	}
	return float64(r.FairTreeFactor)
}

// WriteTable prints the report as an aligned text table, accounts indented by
// depth as sshare does, usage in GPU-hours.
func (s *Standing) WriteTable(w io.Writer) error {
	var buf bytes.Buffer
	tw := tabwriter.NewWriter(&buf, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "# fair share at %s: algorithm %s, charge %s, idle floor %g, half-life %s, last input %s",
		s.GeneratedAt.UTC().Format(time.RFC3339), s.Algorithm, s.Charge, s.IdleFloor,
		time.Duration(s.HalfLifeSeconds*float64(time.Second)), formatTime(s.LastInput))
	if s.Fallback {
		fmt.Fprintf(tw, "\n# FALLBACK: %s", s.FallbackReason)
	}
	fmt.Fprintln(tw)
	fmt.Fprintln(tw, "ACCOUNT\tUSER\tSHARES\tNORM_SHARES\tMEASURED_GPU_H\tALLOCATED_GPU_H\tEFF_USAGE\tCLASSIC\tLEVEL_FS\tFAIR_TREE\tFALLBACK")
	for _, r := range s.Associations {
		indent := strings.Repeat(" ", r.Depth)
		acct, user := indent+r.Account, r.User
		fb := ""
		if r.Fallback {
			fb = "yes"
		}
		shares := r.SharesRaw.String()
		if r.Depth == 0 {
			shares = ""
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%.6f\t%.2f\t%.2f\t%.6f\t%s\t%s\t%s\t%s\n",
			acct, user, shares, r.SharesNormalized, r.UsageMeasured/3600, r.UsageAllocated/3600,
			r.UsageEffective, formatNumber(r.ClassicFactor), formatNumber(r.LevelFS), formatNumber(r.FairTreeFactor), fb)
	}
	for _, u := range s.Unattributed {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%.2f\t%.2f\t%s\t%s\t%s\t%s\t%s\n", u.Account, u.User, "-", "-",
			u.Measured/3600, u.Allocated/3600, "-", "-", "-", "-", "unattributed")
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	// Empty last cells leave padding behind; drop it.
	var out bytes.Buffer
	for _, line := range strings.SplitAfter(buf.String(), "\n") {
		if line == "" {
			continue
		}
		out.WriteString(strings.TrimRight(line, " \n"))
		out.WriteByte('\n')
	}
	_, err := w.Write(out.Bytes())
	return err
}

func formatNumber(n Number) string {
	f := float64(n)
	switch {
	case math.IsNaN(f):
		return ""
	case math.IsInf(f, 1):
		return "inf"
	}
	return strconv.FormatFloat(f, 'f', 6, 64)
}

func formatTime(t time.Time) string {
	if t.IsZero() {
		return "never"
	}
	return t.UTC().Format(time.RFC3339)
}
