// Command soak runs gpuwatch under a fleet's load for a long time and checks
// that it holds up: issue 12's soak. It starts a real `gpuwatch server`
// process (embedded store in a temporary directory, the log actuator, bearer
// tokens from a token file) and N simulated HGX H100 nodes
// (collector/simhw), each with one real gpuwatch agent (collector/agent, the
// production code with the options `gpuwatch agent --simulate` and the demo
// use) that remote-writes its samples and pushes its health report to the
// server with its own node-bound agent token. The agents share this
// process; each has its own HTTP transport, so its own connections.
//
//	make build
//	go run ./internal/soak -nodes 1000 -duration 30m
//
// Every agent runs its real run loop (collector.Runner) on wall-clock
// tickers; the simulated fleet is moved to the wall clock's now every few
// seconds, so sample timestamps are real time. One simulated GPU is heated
// every minute for three minutes, so health verdicts change and are pushed
// at once, besides the 30 s heartbeats. Agents start spread over one full
// interval, as real ones do.
//
// Production agents collect health-critical fields every second and
// everything every 10 s. 1,000 such agents would need about five cores of
// their own (docs/BENCHMARKS.md: about 0.5 % of a core each), more than the
// 2-core machine the soak runs on, so the soak's defaults are a health cycle
// every 10 s and a full one every 60 s (-health-interval, -interval), and
// the kernel log is polled every second (-kmsg-poll): every agent does
// everything it does in production, less often. docs/BENCHMARKS.md ("Soak")
// gives the ratios.
//
// After a warm-up (three full intervals: every agent started, every series
// created) it measures for -duration:
//
//   - memory and goroutines, every minute: the server's resident memory (from
//     /proc) and its Go heap and goroutines (its /metrics, read with a read
//     token), and this process's live heap, resident memory and goroutines
//     (the agents, with the simulator); "flat" means the mean of the last
//     third of the readings is at most 10 % (memory) or 5 % + 20 goroutines
//     above the first third's (a fall is not a leak);
//   - no sample lost, counted end to end: once collection stops and every
//     shipper is empty, the samples the agents' shippers sent (and dropped)
//     against the server's gpuwatch_ingest_samples_accepted_total and against
//     what the store holds, node by node (count_over_time of every series of
//     the node);
//   - health pushes: every push timed from the agent's POST to the server's
//     202, p99 under -push-bound (1 s); the drain controller holds a fresh
//     report of every node at the end;
//   - dashboard queries: six panels (fleet-wide hour ranges, last-hour
//     instants, one node's hour) every minute, each p99 within its bound.
//
// It prints a reading per minute, then the tables docs/BENCHMARKS.md keeps,
// and exits 1 when a check fails. The package's test runs a short soak (50
// nodes for about a minute) in `make test`.
package main
