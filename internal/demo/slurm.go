package demo

import (
	"fmt"
	"time"

	"github.com/gpuwatch/gpuwatch/internal/localslurm"
	"github.com/gpuwatch/gpuwatch/scheduler/adapters/slurm"
)

// startSlurm starts a real single-host Slurm cluster with one node per simulated
// node (gpu01… for node-01…) and returns the actuator that drains through its
// scontrol, and the cluster to close at the end.
func startSlurm(nodes []string, now func() time.Time) (*actuator, *localslurm.Cluster, error) {
	begin := time.Now()
	c, err := localslurm.Launch(localslurm.Options{Nodes: len(nodes)})
	if err != nil {
		return nil, nil, fmt.Errorf("--slurm: cannot start a local Slurm cluster: %w", err)
	}
	a := &actuator{now: now, slurm: true, names: map[string]string{}, started: time.Since(begin),
		inner: slurm.Actuator{Scontrol: slurm.Scontrol{Env: c.Env(), Timeout: 10 * time.Second}}}
	for i, n := range c.Nodes() {
		a.names[nodes[i]] = n
	}
	return a, c, nil
}
