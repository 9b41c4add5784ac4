// Package fairshare is gpuwatch's fair share charged by measured GPU use.
//
// It has four parts, pure computation with no I/O except a ledger file the
// caller names:
//
//	samples (job, account, user, GPU, fraction, activity)
//	   │  Ledger.Record: charge max(activity, idle_floor) per allocated GPU-second,
//	   ▼  decay with a half-life, keep measured and allocated side by side
//	Ledger ──Usage(now)──▶ Usage (decayed GPU-seconds; ErrStale past the bound)
//	   │                     │ AllocationFallback when stale
//	   ▼                     ▼
//	Tree (accounts, shares, users) + Usage ──ComputeFactors──▶ Factors
//	                                                              │ NewStanding
//	                                                              ▼
//	                     Standing (JSON, WriteTable) ──▶ Collector (gpuwatch_fairshare_*)
//
// Factors follow Slurm's priority/multifactor plugin: the classic algorithm
// (normalized shares, effective usage, F = 2^(-UE/S/d)) and Fair Tree (level
// fairshare LF = S/U among siblings, users ranked by a depth-first walk of
// siblings sorted by LF, factor = rank/users). Both are checked against the
// worked example of Slurm's classic_fair_share.html and the expected output of
// Slurm's own Fair Tree regression test (testsuite/expect/test24.4).
//
// Invariants:
//   - every factor is in [0,1]; more usage never raises the user's own factor;
//   - Fair Tree: if sibling accounts A and B have LF(A) > LF(B), every user under
//     A ranks above every user under B;
//   - a sample is charged at most once: per GPU slice and job the ledger keeps a
//     watermark and charges only time after it, so replays never double-count;
//   - on one GPU the fractions of overlapping samples sum to at most 1, and a
//     sample's measured charge never exceeds its allocated charge, so the charges
//     on a GPU over an interval never exceed the interval's GPU-seconds;
//   - stale data is explicit: Usage returns the last good usage and ErrStale.
package fairshare
