package service

import (
	"context"
	"fmt"
	"strconv"

	"github.com/gpuwatch/gpuwatch/scheduler/adapters/slurm"
	"github.com/gpuwatch/gpuwatch/scheduler/snapshot"
)

// SlurmAllocations turns a Slurm job lister (slurm.Scontrol.RunningJobs) into an
// Options.Allocations source: one allocation per running job and node, with the
// GPU indices Slurm gave it (GRES IDX). A job holding GPUs on a node without
// saying which (no IDX) is left out there: the store's
// gpuwatch_gpu_allocation_info covers it.
func SlurmAllocations(running func(ctx context.Context) ([]slurm.Job, error)) func(ctx context.Context) ([]snapshot.Allocation, error) {
	return func(ctx context.Context) ([]snapshot.Allocation, error) {
		jobs, err := running(ctx)
		if err != nil {
			return nil, fmt.Errorf("cannot list running Slurm jobs: %w", err)
		}
		var out []snapshot.Allocation
		for _, j := range jobs {
			id := strconv.FormatUint(uint64(j.ID), 10)
			for _, n := range j.Nodes {
				gpus := n.GPUIndices()
				if len(gpus) == 0 {
					continue
				}
				out = append(out, snapshot.Allocation{JobID: id, Node: n.Name, GPUs: gpus, Source: "slurm", At: j.StartTime})
			}
		}
		return out, nil
	}
}
