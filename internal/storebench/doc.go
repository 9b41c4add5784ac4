// Command storebench measures the telemetry store for docs/BENCHMARKS.md and
// docs/scale-out.md. Its payload is real: one gpuwatch agent (production code,
// dcgm-exporter names and labels) on a simulated HGX H100 node runs a few
// minutes of full collection cycles, and the series its shipper would send
// (the exporter's rendered families plus node=<node>) are replicated over any
// number of node names, each with its own GPU UUIDs and its own place in the
// recorded values (counters keep growing). Subcommands:
//
//	go run ./internal/storebench series
//
// counts one agent's series on /metrics and what its shipper sends per minute
// (the 10 s full cycle and the 1 s health cycle);
//
//	go run ./internal/storebench ingest [-bin bin/gpuwatch] [-nodes 1000] [-cycles 6] [-concurrency 4]
//
// sends the same remote-write 1.0 request bodies (snappy prompb, one request
// per node and cycle, timestamps 10 s apart, encoded before timing) to `gpuwatch
// server`, Debian's Prometheus and Debian's VictoriaMetrics, one at a time on
// loopback, and prints samples/s for the first cycle (series creation) and the
// steady state, the stores' CPU and memory, and the ratios;
//
//	go run ./internal/storebench sustain [-bin bin/gpuwatch] [-nodes 1000] [-duration 60s]
//
// paces that load in real time (every node once per 10 s, spread evenly) at
// `gpuwatch server` and reports whether it keeps up: per-request lag behind
// schedule, the server's CPU and resident memory;
//
//	go run ./internal/storebench query [-nodes 1000] [-hours 24] [-step 10s] [-rules=true]
//	go run ./internal/storebench disk [-nodes 20] [-hours 8]
//
// write simulated time straight into an embedded store (embedded.Store.Append
// through the gpuwatch server's own handler), wait for the TSDB to compact it
// into blocks, and print bytes per sample on disk; query then times the
// dashboard queries through the server's Prometheus HTTP API (p50, p95). With
// -rules (the default) query also evaluates the recording rules of
// alerts/fleet.rules.yml every group interval of simulated time while writing,
// as the server's rules manager would, reports what one evaluation costs, and
// times the fleet panels on the recorded series beside the raw queries.
package main
