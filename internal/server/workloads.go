package server

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/gpuwatch/gpuwatch/telemetry"
)

// allocationSlack is how much older than its node's newest attribution or GPU
// sample an allocation series may be and still count: an agent ships an
// unchanged series at least once per full interval (10 s by default), so a
// series 45 s behind its node's newest has ended (its job finished) while the
// agent goes on reporting.
const allocationSlack = 45 * time.Second

// workloadsFromStore is the drain controller's default Options.Workloads: the
// work on a node's GPUs as its agent's attribution reports it
// (gpuwatch_gpu_allocation_info): Slurm job ids, or "namespace/pod" for
// Kubernetes pods, for the GPUs given by UUID, or for the whole node when gpus is
// nil. Without it, a drain of mode drain or requeue would take the node or GPU out
// of service but evacuate nothing. A store that does not answer names no work
// (the drain still happens, and the audit says nothing was evacuated).
func (s *Server) workloadsFromStore(now func() time.Time) func(node string, gpus []string) []string {
	return func(node string, gpus []string) []string {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		expr := fmt.Sprintf(`timestamp({__name__=~"%s|%s", %s=%q})`, telemetry.MetricGPUAllocationInfo,
			telemetry.DCGMGPUTemp, telemetry.LabelNode, node)
		v, err := s.querier.Instant(ctx, expr, now())
		if err != nil {
			s.opts.Logger.Warn("drain: cannot read the node's workloads from the store; nothing evacuated",
				"node", node, "err", err)
			return nil
		}
		var newest float64
		for _, smp := range v {
			newest = max(newest, smp.Value)
		}
		var out []string
		for _, smp := range v {
			// timestamp() drops __name__: an allocation series is the one with
			// a job or a pod.
			job := smp.Labels.Get(telemetry.LabelJobID)
			if pod := smp.Labels.Get(telemetry.LabelPod); job == "" && pod != "" {
				job = pod
				if ns := smp.Labels.Get(telemetry.LabelNamespace); ns != "" {
					job = ns + "/" + pod
				}
			}
			if job == "" || newest-smp.Value > allocationSlack.Seconds() {
				continue
			}
			if gpus != nil && !slices.Contains(gpus, smp.Labels.Get(telemetry.LabelGPUUUID)) {
				continue
			}
			if !slices.Contains(out, job) {
				out = append(out, job)
			}
		}
		slices.Sort(out)
		return out
	}
}
