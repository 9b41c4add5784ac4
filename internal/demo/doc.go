// Package demo runs `gpuwatch demo`: a simulated fleet (collector/simhw) playing a
// scripted fault story, with the real gpuwatch agent (collector/agent) on every
// node, and what the agents report summarised live for a human.
//
// Each agent is built exactly as `gpuwatch agent --simulate` builds one: it reads
// its node through go-nvml's nvml.Interface, the node's /sys tree and its kernel
// log, judges health with the catalog-driven engine, and serves /metrics, /health,
// /topology and /sources on a loopback port that the demo prints. The demo loop
// advances simulated time and then runs one collection cycle on every agent (a full
// one every few ticks), so the agents' clocks and schedules are simulated time.
//
// The demo also runs a gpuwatch server in-process (internal/server: the embedded
// Prometheus TSDB in the demo's working directory, remote write in, the Prometheus
// query API out) on loopback, and every agent remote-writes every sample to it, as
// `gpuwatch agent --remote-write` does. Its URL is the one to add in Grafana as a
// Prometheus data source; the final summary reads the data back through the
// server's Querier. Simulated time ends, by default, when the run starts, so the
// samples' timestamps lie in the recent past where Grafana looks.
//
// The server is also the control plane, on the fleet's simulated clock
// (server.Options.Clock). Every agent pushes its health report to the server's
// drain controller (agent.Options.ServerURL) when its verdict changes; the demo
// waits for each push to arrive before simulated time moves on and re-sends
// unchanged reports every 30 simulated seconds, the heartbeat a pusher on the
// simulated clock would send. The controller decides under the demo's policy
// (DefaultDrainPolicy: gpuwatch's default rules with windows short enough for ten
// minutes) and acts through the log actuator, or through scontrol on a real
// Slurm cluster started on the host (Options.Slurm, internal/localslurm). A reboot the
// actuator accepts reboots the simulated node: its agent stops, and after
// rebootTime its GPUs are reset and a new agent starts on a new boot. The demo
// prints the controller's decisions from its audit log and the actuator's calls
// as they happen, and at the end the drains, resumes, budget and the latency
// from each scripted fault to its drain.
//
// Fair share (DefaultFairShare: the simulated workload's accounts and users,
// equal shares) reads the store every simulated minute. The workload generator
// writes only a job's cgroup; the demo adds each process's status and environ
// (owner, SLURM_JOB_ACCOUNT, SLURM_JOB_USER), as a Slurm node has them, so that
// the agents attribute each GPU to an account. The standings are printed every
// Options.FairShareEvery with the factors charging by allocation would give.
//
// The server runs the placement service too, and the simulated workload goes
// through it: the workload generator's Place hook (simhw.WorkloadOptions.Place)
// rebuilds the service's snapshot from the store once the agents have shipped
// their last cycle, reserves each job's GPUs with the engine
// (placement.Engine.Reserve) and starts the job where the engine put it; the
// reservation is handed off when the snapshot shows the job's allocation, or
// released when the job ends first. Each placement is printed with the
// decision's short why; the final summary counts them and checks them against
// the drain controller's exclusions at the time (PlacementResult).
//
// The demo never looks inside the simulator to learn what happened: everything it
// prints comes from the agents' snapshots and health reports and from the
// server, so what it shows is what gpuwatch would see on real GPUs. The fault
// story is the demo's input: it is read only to say how long after each fault
// its drain took effect.
package demo
