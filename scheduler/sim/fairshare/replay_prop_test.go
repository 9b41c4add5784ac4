package fairshare

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	fs "github.com/gpuwatch/gpuwatch/scheduler/fairshare"
	"pgregory.net/rapid"
)

func drawWorkload(t *rapid.T) *Workload {
	c := Cluster{Nodes: rapid.IntRange(1, 3).Draw(t, "nodes"), GPUsPerNode: rapid.IntRange(1, 4).Draw(t, "gpn")}
	w := &Workload{Name: "rapid", Start: epoch, Cluster: c, Shares: map[string]int64{"a": rapid.Int64Range(0, 3).Draw(t, "sa"), "b": rapid.Int64Range(1, 3).Draw(t, "sb")}}
	n := rapid.IntRange(1, 12).Draw(t, "jobs")
	for i := range n {
		dur := time.Duration(rapid.IntRange(1, 600).Draw(t, "dur")) * time.Minute
		vals := rapid.SliceOfN(rapid.Float64Range(0, 1), 1, 4).Draw(t, "profile")
		p, err := NewProfile(fmt.Sprint(i), 7*time.Minute, vals)
		if err != nil {
			t.Fatal(err)
		}
		acct := rapid.SampledFrom([]string{"a", "b"}).Draw(t, "account")
		w.Jobs = append(w.Jobs, Job{ID: i, Name: fmt.Sprint(i), Arrival: time.Duration(rapid.IntRange(0, 600).Draw(t, "arr")) * time.Minute,
			Duration: dur, Walltime: dur + time.Duration(rapid.IntRange(0, 300).Draw(t, "extra"))*time.Minute,
			GPUs: rapid.IntRange(1, c.GPUs()).Draw(t, "gpus"), Account: acct, User: acct + rapid.SampledFrom([]string{"1", "2"}).Draw(t, "user"), Profile: p})
	}
	return w
}

// TestReplayInvariants: for random small workloads and any policy, every job
// starts at or after its arrival and runs exactly its duration; GPUs in use
// never exceed the cluster; replays are deterministic; under allocation
// charging activity profiles change nothing, and measured charging of fully
// busy jobs equals allocation charging.
func TestReplayInvariants(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		w := drawWorkload(t)
		charge := rapid.SampledFrom(Policies).Draw(t, "charge")
		cfg := Config{Policy: policy(charge), Interval: time.Duration(rapid.IntRange(1, 90).Draw(t, "interval")) * time.Minute,
			BackfillDepth: rapid.SampledFrom([]int{-1, 0, 1}).Draw(t, "depth")}
		tr, err := Replay(context.Background(), w, cfg)
		if err != nil {
			t.Fatal(err)
		}
		type ev struct {
			at    time.Duration
			delta int
		}
		var evs []ev
		for i, o := range tr.Jobs {
			j := w.Jobs[i]
			if o.Start < j.Arrival || o.End != o.Start+j.Duration {
				t.Fatalf("job %d arrives %v, runs [%v, %v) for a duration of %v", i, j.Arrival, o.Start, o.End, j.Duration)
			}
			evs = append(evs, ev{o.Start, j.GPUs}, ev{o.End, -j.GPUs})
		}
		slices.SortFunc(evs, func(a, b ev) int {
			if a.at != b.at {
				return cmp.Compare(a.at, b.at)
			}
			return a.delta - b.delta // ends first
		})
		used := 0
		for _, e := range evs {
			used += e.delta
			if used > w.Cluster.GPUs() {
				t.Fatalf("%d GPUs in use at %v on a %d-GPU cluster", used, e.at, w.Cluster.GPUs())
			}
		}
		again, _ := Replay(context.Background(), w, cfg)
		if !slices.Equal(tr.Jobs, again.Jobs) {
			t.Fatal("two replays of one workload differ")
		}
		if charge != fs.ChargeAllocation {
			return
		}
		busy := *w
		busy.Jobs = slices.Clone(w.Jobs)
		one, _ := ConstantProfile(1)
		for i := range busy.Jobs {
			busy.Jobs[i].Profile = one
		}
		for _, c := range []fs.ChargePolicy{fs.ChargeAllocation, fs.ChargeMeasured} {
			cb := cfg
			cb.Policy = policy(c)
			tb, err := Replay(context.Background(), &busy, cb)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(tr.Jobs, tb.Jobs) {
				t.Fatalf("%s with every job fully busy differs from allocation with the real profiles", c)
			}
		}
	})
}

// TestBackfillNeverHurtsTheNextJob: with exact walltimes, no arrivals after
// time 0 and one account (so priorities are arrival order), EASY backfill
// never starts the first job that has to wait later than it would start
// with no backfill at all.
func TestBackfillNeverHurtsTheNextJob(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		w := drawWorkload(t)
		for i := range w.Jobs {
			w.Jobs[i].Arrival = 0
			w.Jobs[i].Walltime = w.Jobs[i].Duration
			w.Jobs[i].Account, w.Jobs[i].User = "b", "b1"
		}
		cfg := Config{Policy: policy(fs.ChargeAllocation), Interval: time.Hour}
		easy, err := Replay(context.Background(), w, cfg)
		if err != nil {
			t.Fatal(err)
		}
		cfg.BackfillDepth = -1
		strict, err := Replay(context.Background(), w, cfg)
		if err != nil {
			t.Fatal(err)
		}
		for i, o := range strict.Jobs {
			if o.Start > 0 {
				if easy.Jobs[i].Start > o.Start {
					t.Fatalf("job %d, the first to wait, starts at %v with backfill and %v without", i, easy.Jobs[i].Start, o.Start)
				}
				return
			}
		}
	})
}
