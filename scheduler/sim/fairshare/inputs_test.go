package fairshare

import (
	"slices"
	"testing"
	"time"

	"pgregory.net/rapid"
)

func TestLoadDutyCycleExcerpt(t *testing.T) {
	ps, err := LoadDutyCycleProfiles("testdata/duty-cycle-excerpt.csv")
	if err != nil {
		t.Fatal(err)
	}
	// Five pods in the excerpt; the one with fewer than 60 samples is
	// dropped. Means of the first 120 samples, computed from the CSV: 0,
	// 4.376, 5.663, 6.865 percent.
	if len(ps) != 4 {
		t.Fatalf("%d profiles, want 4", len(ps))
	}
	var means []float64
	for _, p := range ps {
		if p.Len() != 120 || p.Step() != 57*time.Second {
			t.Errorf("%s: %d values every %v, want 120 every 57s", p.Label(), p.Len(), p.Step())
		}
		means = append(means, p.Mean())
	}
	slices.Sort(means)
	for i, want := range []float64{0, 0.0437611111, 0.0566277778, 0.0686506944} {
		if d := means[i] - want; d > 1e-9 || d < -1e-9 {
			t.Errorf("mean %d = %v, want %v", i, means[i], want)
		}
	}
}

func TestLoadHeliosExcerpt(t *testing.T) {
	from := time.Date(2020, 5, 11, 0, 0, 0, 0, time.UTC)
	ds, err := LoadHeliosDemand("testdata/helios-excerpt.csv", "testdata/helios-quota-excerpt.csv", from, 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(ds) != 2 || ds[0].VC != "vc3sl" || ds[1].VC != "vcSoL" {
		t.Fatalf("VCs %+v", ds)
	}
	// Sums over the day, from the CSV: vc3sl runs 719 small-job and 2344
	// large-job GPU-steps over 392 and 293 job-steps: sizes round(1.83) = 2
	// and 8·round(8.0/8) = 8. vcSoL: 287/287 → 1, 664/83 → 8. Quotas from
	// the 2020-05-11 row: 64 and 32.
	want := []struct {
		quota              int64
		small, large       int
		sumSmall, sumLarge int
	}{{64, 2, 8, 719, 2344}, {32, 1, 8, 287, 664}}
	for i, d := range ds {
		w := want[i]
		sum := func(x []int) (s int) {
			for _, v := range x {
				s += v
			}
			return s
		}
		if d.Quota != w.quota || d.SmallSize != w.small || d.LargeSize != w.large || sum(d.Small) != w.sumSmall || sum(d.Large) != w.sumLarge || len(d.Small) != 144 {
			t.Errorf("%s: quota %d sizes %d/%d sums %d/%d over %d steps, want %+v", d.VC, d.Quota, d.SmallSize, d.LargeSize, sum(d.Small), sum(d.Large), len(d.Small), w)
		}
	}
	if _, err := LoadHeliosDemand("testdata/helios-excerpt.csv", "testdata/helios-quota-excerpt.csv", from, 2); err == nil {
		t.Error("a window past the excerpt's day loaded; want an error naming the missing rows")
	}
}

// TestDecomposeByHand: LIFO stack of size-2 jobs over the series
// 0,3,5,2,2,0. Step 1 pushes 2 and 1 (the remainder); step 2 pushes 2; step
// 3 falls to 2: pops the size-2 job of step 2 and the 1 of step 1; step 5
// falls to 0: pops the first job. Second case: 4 then 1 with size 4: the
// job ends at step 1, overshooting to 0, and a 1-GPU job refills at step 1.
func TestDecomposeByHand(t *testing.T) {
	got := decompose([]int{0, 3, 5, 2, 2, 0}, 2)
	want := []interval{{2, 3, 2}, {1, 3, 1}, {1, 5, 2}}
	if !slices.Equal(got, want) {
		t.Errorf("decompose = %v, want %v", got, want)
	}
	got = decompose([]int{4, 1}, 4)
	want = []interval{{0, 1, 4}, {1, 2, 1}}
	if !slices.Equal(got, want) {
		t.Errorf("decompose = %v, want %v", got, want)
	}
}

// TestDecomposeConservesGPUTime: the jobs hold exactly the series, step by
// step, and never exceed the class size.
func TestDecomposeConservesGPUTime(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		series := rapid.SliceOfN(rapid.IntRange(0, 40), 1, 60).Draw(t, "series")
		size := rapid.IntRange(1, 16).Draw(t, "size")
		held := make([]int, len(series))
		for _, iv := range decompose(series, size) {
			if iv.gpus < 1 || iv.gpus > size || iv.start >= iv.end {
				t.Fatalf("bad job %+v", iv)
			}
			for k := iv.start; k < iv.end; k++ {
				held[k] += iv.gpus
			}
		}
		if !slices.Equal(held, series) {
			t.Fatalf("jobs hold %v, series is %v", held, series)
		}
	})
}

func TestComposeExcerpt(t *testing.T) {
	from := time.Date(2020, 5, 11, 0, 0, 0, 0, time.UTC)
	ds, err := LoadHeliosDemand("testdata/helios-excerpt.csv", "testdata/helios-quota-excerpt.csv", from, 1)
	if err != nil {
		t.Fatal(err)
	}
	ps, err := LoadDutyCycleProfiles("testdata/duty-cycle-excerpt.csv")
	if err != nil {
		t.Fatal(err)
	}
	o := HeliosOptions{From: from, Days: 1, Seed: 7, Cluster: Cluster{Nodes: 4, GPUsPerNode: 8}, Bands: 2}
	a, err := Compose(ds, ps, o)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := Compose(ds, ps, o)
	if len(a.Jobs) == 0 || len(a.Jobs) != len(b.Jobs) {
		t.Fatalf("%d and %d jobs", len(a.Jobs), len(b.Jobs))
	}
	var gpuSteps float64
	for i, j := range a.Jobs {
		k := b.Jobs[i]
		if j.Arrival != k.Arrival || j.Duration != k.Duration || j.GPUs != k.GPUs || j.Profile != k.Profile || j.Phase != k.Phase {
			t.Fatalf("job %d differs between two compositions with one seed: %+v vs %+v", i, j, k)
		}
		if j.Walltime != 2*j.Duration {
			t.Errorf("job %d walltime %v, want 2 × %v", i, j.Walltime, j.Duration)
		}
		gpuSteps += float64(j.GPUs) * float64(j.Duration) / float64(10*time.Minute)
	}
	if err := a.Validate(); err != nil {
		t.Fatal(err)
	}
	// Jitter moves each start and end by up to one step independently, so
	// the GPU-time is the series' (719+2344+287+664 = 4014 GPU-steps) within
	// a few percent.
	if gpuSteps < 0.95*4014 || gpuSteps > 1.05*4014 {
		t.Errorf("composed GPU-steps %.0f, want about 4014", gpuSteps)
	}
	// Two bands, two teams: a seeded permutation gives each team its own
	// band, so their jobs draw from disjoint pod sets.
	pods := map[string]map[*Profile]bool{}
	for _, j := range a.Jobs {
		if pods[j.Account] == nil {
			pods[j.Account] = map[*Profile]bool{}
		}
		pods[j.Account][j.Profile] = true
	}
	for p := range pods["vc3sl"] {
		if pods["vcSoL"][p] {
			t.Errorf("both teams drew %s; bands should be disjoint", p.Label())
		}
	}
}
