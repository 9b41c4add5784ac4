// Command agentbench measures the gpuwatch agent on a simulated HGX H100 node for
// docs/BENCHMARKS.md. It has three modes:
//
//	go run ./internal/agentbench hour [-cycles 3600]
//
// drives one agent in simulated time through an hour of collection (3600 health
// cycles, one in ten of them full) and prints the Go heap and the process's
// resident memory at the start, half way and at the end;
//
//	go run ./internal/agentbench process [-bin bin/gpuwatch] [-duration 60s] [-scrape 15s] [-remote-write] [-check=true] [-- agent flags]
//
// starts `gpuwatch agent --simulate hgx-h100` as a real process (with
// -remote-write, shipping to a counting sink on loopback, as in production),
// scrapes its /metrics on a schedule, takes a CPU profile of the measured time
// from its /debug/pprof/profile, and prints the process's CPU time (utime+stime
// from /proc/PID/stat) as a share of one core and its VmRSS (anonymous and
// file-backed) and VmHWM; then the agent alone, against issue 12's goals: its
// CPU is the process's times the share of the profile outside the simulated
// hardware (collector/simhw and the simulated node's loop; the Go runtime and
// GC are charged to the agent), its memory the process's VmRSS less the Go heap
// the simulated node keeps live (the same node built and advanced in this
// process). It exits non-zero when either goal is missed, unless -check=false;
//
//	go tool pprof -traces PROFILE | go run ./internal/agentbench profshare
//
// splits a CPU profile of the agent benchmarks (collector/agent) or of the agent
// process into the agent's own code, the simulated NVML library it calls, and
// the simulated hardware advancing between cycles.
package main
