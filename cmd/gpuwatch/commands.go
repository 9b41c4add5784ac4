//go:build !agentonly

package main

// programName is how the binary names itself in usage and errors.
const programName = "gpuwatch"

// programSummary is the first line of the usage.
const programSummary = "gpuwatch watches GPU fleets and feeds what it sees back into scheduling."

// defaultCommand runs when the first argument is a flag; none here.
const defaultCommand = ""

// commands is the explicit registry of subcommands: the agent's and the control
// plane's.
func commands() map[string]command {
	cmds := map[string]command{
		"drain":     {"drain a node through the gpuwatch server's actuator, as a person (audited, never resumed by automation)", runDrain},
		"resume":    {"resume a node through the gpuwatch server's actuator, as a person (audited)", runResume},
		"place":     {"ask the gpuwatch server for a topology- and health-aware gang placement (dry run or reserved with a lease)", runPlace},
		"explain":   {"show why the gpuwatch server placed a job where it did: every filter verdict and score", runExplain},
		"topology":  {"export the fabric (ibnetdiscover dump, site YAML, topology.conf, Kubernetes node labels) as Slurm topology.conf, node labels, a Kueue Topology, Volcano HyperNodes", runTopology},
		"simulate":  {"replay traces: `simulate openb` (GPU packing with the FGD paper's protocol), `simulate fairshare` (fair share charged by allocation or by measured use)", runSimulate},
		"report":    {"print a GPU utilization report (allocated vs measured GPU-hours, efficiency, idle, headroom) by account, user, job, namespace, node or model", runReport},
		"faults":    {"print fault analytics: Xids by code, action, model and node; MTBF; lemon nodes; GPUs to drain soon; worst InfiniBand ports and NVLinks", runFaults},
		"jobstats":  {"print one job's GPU efficiency, like seff: per GPU SM activity, utilization, memory peak, power, energy, idle stretches, Xids and conditions, and a verdict", runJobStats},
		"fairshare": {"print the fair-share standing (shares, measured and allocated GPU usage, factors) from a gpuwatch server", runFairShare},
		"demo":      {"run a simulated GPU fleet with a scripted fault story and a gpuwatch agent per node; print what the agents report", runDemo},
		"server":    {"run the control plane: the store (remote-write ingest, Prometheus query API), drain controller, placement, fair share, alerting rules; behind bearer tokens and TLS", runServer},
		"token":     {"make a bearer token: a random secret into a file and the token-file entry (name, role, sha256) for the server", runToken},
	}
	cmds["stragglers"] = stragglersCommand // stragglers.go
	for name, c := range agentCommands() {
		cmds[name] = c
	}
	return cmds
}
