package sim

import (
	"fmt"
	"math"
	"slices"
	"strconv"
)

// Sample is the cluster after one arrival: the GPU request of every pod that has
// arrived so far (placed or not) and the GPU milli allocated now.
type Sample struct {
	ArrivedMilli   int64
	AllocatedMilli int64
}

// Point is one column of an allocation curve: the GPU allocation ratio (%) once
// the arrived GPU request reaches DemandPct % of capacity. OK is false when no
// sample fell near that demand.
type Point struct {
	DemandPct int     `json:"demand_pct"`
	AllocPct  float64 `json:"alloc_pct"`
	OK        bool    `json:"-"`
}

// AllocationCurve turns per-arrival samples into the curve the FGD paper plots,
// computed exactly as the kubernetes-scheduler-simulator's analysis scripts do
// (scripts/analysis.py and experiments/analysis/merge_alloc_discrete_0920.py):
// each sample's demand is round(arrived / totalGPUs / 10) (round half to even) and
// its allocation round(allocated / totalGPUs / 10, 2); column k is the mean
// allocation of the samples with demand k (summed as numpy sums), rounded to 2
// decimals, or, when there are none, of the samples with demand in [k-1, k+1].
// Columns run from 0 to maxPct.
func AllocationCurve(samples []Sample, totalGPUs, maxPct int) ([]Point, error) {
	if totalGPUs <= 0 {
		return nil, fmt.Errorf("cannot compute an allocation curve for %d GPUs", totalGPUs)
	}
	if maxPct < 0 {
		return nil, fmt.Errorf("cannot compute an allocation curve up to %d%%", maxPct)
	}
	t := float64(totalGPUs)
	demand := make([]float64, len(samples))
	alloc := make([]float64, len(samples))
	byDemand := map[int][]int{}
	for i, s := range samples {
		demand[i] = float64(DemandPct(s.ArrivedMilli, totalGPUs))
		alloc[i] = Round2(float64(s.AllocatedMilli) / t / 10)
		if demand[i] >= 0 && demand[i] <= float64(maxPct+1) {
			byDemand[int(demand[i])] = append(byDemand[int(demand[i])], i)
		}
	}
	pts := make([]Point, 0, maxPct+1)
	for k := 0; k <= maxPct; k++ {
		idx := byDemand[k]
		if len(idx) == 0 {
			idx = append(append(idx, byDemand[k-1]...), byDemand[k+1]...)
			slices.Sort(idx) // pandas averages in row order
		}
		p := Point{DemandPct: k}
		if len(idx) > 0 {
			vals := make([]float64, len(idx))
			for j, i := range idx {
				vals[j] = alloc[i]
			}
			p.AllocPct, p.OK = Round2(pairwiseSum(vals)/float64(len(vals))), true
		}
		pts = append(pts, p)
	}
	return pts, nil
}

// DemandPct is the curve column an arrived GPU request falls in.
func DemandPct(arrivedMilli int64, totalGPUs int) int {
	return int(math.RoundToEven(float64(arrivedMilli) / float64(totalGPUs) / 10))
}

// pairwiseSum adds as numpy's add.reduce does on contiguous float64 data (its
// pairwise_sum: eight accumulators in blocks of up to 128, halves above), which
// pandas' mean uses; a plain running sum can differ in the last bit, and the
// curve rounds means that sit on a .xx5 boundary.
func pairwiseSum(a []float64) float64 {
	const block = 128
	n := len(a)
	switch {
	case n < 8:
		var s float64
		for _, v := range a {
			s += v
		}
		return s
	case n <= block:
		var r [8]float64
		copy(r[:], a[:8])
		i := 8
		for ; i < n-n%8; i += 8 {
			for j := range r {
				r[j] += a[i+j]
			}
		}
		s := ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]))
		for ; i < n; i++ {
			s += a[i]
		}
		return s
	default:
		n2 := n / 2
		n2 -= n2 % 8
		return pairwiseSum(a[:n2]) + pairwiseSum(a[n2:])
	}
}

// Round2 rounds to two decimals as Python's round(x, 2) does: correctly rounded
// from the exact binary value, halves to even.
func Round2(x float64) float64 {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return x
	}
	r, _ := strconv.ParseFloat(strconv.FormatFloat(x, 'f', 2, 64), 64)
	return r
}
