// Package dcgm is the agent's DCGM source: the datacenter profiling fields
// (DCGM_FI_PROF_*: graphics engine, SM active and occupancy, tensor, DRAM, FP64/32/16
// pipes, PCIe and NVLink bytes) and DCGM's health watches, read from a DCGM host
// engine through github.com/NVIDIA/go-dcgm.
//
// # The seam
//
// The source talks to DCGM only through Library, an interface shaped like
// go-dcgm's API and spoken in its types (connect, the GPUs, field watches,
// latest values, health watches and the health check). A real node uses go-dcgm
// over libdcgm.so.4 (Options.Library nil); a simulated node passes its
// collector/simhw DCGM, so the source below runs unchanged against simulated
// hardware, as the NVML sources run against the simulated NVML.
//
// # When DCGM is absent
//
// Most nodes run no host engine, and many have no libdcgm.so.4 at all (go-dcgm opens
// it with dlopen at run time, so building needs no DCGM). The source then says so
// once through its logger, Collect returns a cached error (so the agent reports
// gpuwatch_source_up{source="dcgm"} 0) without touching the library, and a new
// connection attempt is made at most every Options.RetryEvery, in the background of
// a Collect that never waits longer than its context allows.
//
// go-dcgm calls into libdcgm through symbols that are resolved only after a
// successful Init: any other call made after a failed Init (or without Init) jumps to
// an unresolved symbol and kills the process, which no recover can catch. Every
// library call here therefore sits behind a small state machine (down → connecting →
// up → down, in source.go; library.go guards each call) that only calls the library
// in the up state, or from the connection attempt once Init has succeeded; the state
// machine is tested with a fake Library, the source end to end with the simulated
// one, and the real library on a machine without DCGM.
//
// # What it emits
//
// One sample per GPU and profiling field the catalog declares with
// telemetry.SourceDCGM (telemetry.LookupDCGMField maps the DCGM field id to the
// series), labelled only with gpu_index: the DCGM GPU id is mapped to the NVML index
// through the GPU's UUID and the Inventory. A value DCGM reports as blank, not
// found, not supported or not permissioned is left out.
//
// Health watches are not series: Incidents returns what the last health check
// reported (DCGM_FR_* code, message, health system, GPU index), and
// Incident.Condition turns one into a telemetry.Condition of kind
// telemetry.ConditionDCGMHealth for the health engine.
package dcgm
