package slurm

import (
	"context"
	"errors"
	"fmt"
	"math"

	"github.com/gpuwatch/gpuwatch/scheduler/fairshare"
)

// DefaultSiteFactorScale turns a fair-share factor in [0,1] into a SiteFactor:
// the factor × 10,000, about the weight sites give PriorityWeightFairshare.
const DefaultSiteFactorScale = 10000

// SiteFactorWriter feeds gpuwatch's fair share (charged by measured GPU use)
// into Slurm's own priority: every pending job's SiteFactor is set to its
// user's factor in the standing times Scale. priority/multifactor adds the
// SiteFactor to the job's priority (Slurm 22.05 applies no weight to it), so
// Slurm's scheduler, backfill included, orders the queue by measured use
// without any change to Slurm.
type SiteFactorWriter struct {
	Scontrol Scontrol
	// Scale multiplies the factor (default DefaultSiteFactorScale).
	Scale int64
}

// SiteFactorResult says what Apply did.
type SiteFactorResult struct {
	Pending, Updated, Unchanged int
	// Unknown are pending jobs whose account and user the standing lacks; their
	// SiteFactor is left alone.
	Unknown int
}

// Apply sets the SiteFactor of every pending job from the standing. A job
// whose SiteFactor already has the value is not touched. A fallback standing
// (stale usage) is still applied: it is allocation-based, as Slurm's own
// would be, and flagged in the standing.
func (w SiteFactorWriter) Apply(ctx context.Context, st *fairshare.Standing) (SiteFactorResult, error) {
	var res SiteFactorResult
	if st == nil {
		return res, errors.New("site factor: no fair-share standing")
	}
	scale := w.Scale
	if scale <= 0 {
		scale = DefaultSiteFactorScale
	}
	factors := map[[2]string]float64{}
	for _, r := range st.Associations {
		if r.User == "" {
			continue
		}
		if f := st.Factor(r); !math.IsNaN(f) {
			factors[[2]string{r.Account, r.User}] = f
		}
	}
	jobs, err := w.Scontrol.PendingJobs(ctx)
	if err != nil {
		return res, fmt.Errorf("site factor: pending jobs: %w", err)
	}
	res.Pending = len(jobs)
	if len(jobs) == 0 {
		return res, nil
	}
	current, err := w.Scontrol.SiteFactors(ctx)
	if err != nil {
		return res, fmt.Errorf("site factor: current values: %w", err)
	}
	var errs []error
	for _, j := range jobs {
		f, ok := factors[[2]string{j.Account, j.User}]
		if !ok {
			res.Unknown++
			continue
		}
		v := min(int64(math.Round(f*float64(scale))), MaxSiteFactor)
		if cur, ok := current[j.ID]; ok && cur == v {
			res.Unchanged++
			continue
		}
		if err := w.Scontrol.SetSiteFactor(ctx, j.ID, v); err != nil {
			errs = append(errs, fmt.Errorf("job %d: %w", j.ID, err))
			continue
		}
		res.Updated++
	}
	return res, errors.Join(errs...)
}
