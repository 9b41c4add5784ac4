// Package demo runs `gpuwatch demo`: a simulated fleet (collector/simhw) playing a
// scripted fault story, read back through the same paths the agent reads real
// hardware with (go-nvml's nvml.Interface, procfs over /sys/class/infiniband, the
// kernel log with collector/xid), and summarised live for a human.
//
// The demo never looks inside the simulator to learn what happened: everything it
// prints was observed at the hardware boundary, so what it shows is what gpuwatch
// would see on real GPUs. Later pieces (the agent, the store, placement, drain, fair
// share) join the demo as they land.
package demo
