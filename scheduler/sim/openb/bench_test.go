package openb

import "testing"

// BenchmarkReplay replays openb_pod_list_default (130 % demand, ~10,800 pods on
// 1,213 nodes) once per iteration with seed 42.
func BenchmarkReplay(b *testing.B) {
	nodes, pods := defaultTrace(b)
	for _, pol := range []string{"random", "bestfit", "fgd", "gpuwatch"} {
		b.Run(pol, func(b *testing.B) {
			var r *Result
			for b.Loop() {
				var err error
				if r, err = Run(Options{Nodes: nodes, Pods: pods, Policy: pol, Seed: 42, Tune: DefaultTune}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(r.Arrived), "pods/op")
			b.ReportMetric(float64(r.Stats.ScoreCalls-r.Stats.ScoreHits)/float64(r.Arrived), "scores/pod")
		})
	}
}
