// Command agentbench measures the gpuwatch agent on a simulated HGX H100 node for
// docs/BENCHMARKS.md. It has three modes:
//
//	go run ./internal/agentbench hour [-cycles 3600]
//
// drives one agent in simulated time through an hour of collection (3600 health
// cycles, one in ten of them full) and prints the Go heap and the process's
// resident memory at the start, half way and at the end;
//
//	go run ./internal/agentbench process [-bin bin/gpuwatch] [-duration 60s] [-scrape 15s] [-- agent flags]
//
// starts `gpuwatch agent --simulate hgx-h100` as a real process, scrapes its
// /metrics on a schedule, and prints its CPU time (utime+stime from
// /proc/PID/stat) as a share of one core and its VmRSS and VmHWM;
//
//	go tool pprof -traces PROFILE | go run ./internal/agentbench profshare
//
// splits a CPU profile of the agent benchmarks (collector/agent) into the agent's
// own code, the simulated NVML library it calls, and the simulated hardware
// advancing between cycles.
package main
