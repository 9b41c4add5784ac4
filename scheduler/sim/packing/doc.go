// Package packing holds GPU packing policies for the sim engine: the baselines
// and the fragmentation-aware policy of the FGD paper (Weng et al., "Beware of
// Fragmentation: Scheduling GPU-Sharing Workloads with Fragmentation Gradient
// Descent", USENIX ATC '23), ported from the paper's own simulator
// (hkust-adsl/kubernetes-scheduler-simulator, pkg/simulator/plugin and
// pkg/utils/frag.go), and gpuwatch's policy built on it.
//
//	random    every feasible node scores the same (the engine picks one uniformly);
//	          a shared GPU is chosen at random among those it fits on
//	bestfit   least CPU + GPU left after placing (the simulator's BestFitScore,
//	          integer 0–100); tightest shared GPU
//	fgd       fragmentation gradient descent: the node (and shared GPU) whose
//	          expected GPU fragmentation, measured against the target workload,
//	          drops the most (the simulator's FGDScore, integer 0–100)
//	gpuwatch  FGD's gradient at full precision, ties broken by packing (see GPUWatch)
//
// All policies are pure (sim's invariants); New is the explicit registry.
package packing
