// Package framework is the vocabulary of gpuwatch placement: the Request (a gang of
// GPUs placed all or nothing), the Filter, Picker and Scorer plugin interfaces with
// the Status they return, the Candidate they look at, and the Decision record that
// explains a placement afterwards (Explain renders it as text, ExplainJSON as JSON).
//
// The placement engine (scheduler/placement) runs, for every candidate node:
//
//	Filters (narrow Candidate.Usable; reject with a reason)
//	   → Picker (choose Candidate.Take GPUs among Usable: Candidate.Chosen)
//	   → Scorers (each a score in [0,1]; weighted mean is the node's score)
//
// and then assembles the gang from the scored nodes in the lowest topology domain
// that fits.
//
// # Plugin contract
//
//   - Plugins are pure: they read the Request, the Candidate and the immutable
//     snapshot behind it, do no I/O, keep no state between calls, and may run on
//     many goroutines at once (each Candidate belongs to one goroutine).
//   - A Filter may only narrow Candidate.Usable; a Picker only sets
//     Candidate.Chosen; a Scorer modifies nothing.
//   - A Filter rejects when fewer than Candidate.Need GPUs remain usable. On the hot
//     path (Candidate.Explain false) reasons are constant strings, so rejections
//     aggregate by reason and cost no allocation; with Explain set, plugins say
//     which GPUs and why.
//   - Scores are in [0,1], higher is better; the engine clamps and records anything
//     else as an error of the plugin.
//   - Unknown or stale telemetry is neutral, never a reason to look good:
//     allocation-only behaviour is the fallback.
//   - The placement engine runs the plugins once per class of alike nodes when
//     every one is a Classifier: each appends what it reads of a node and of a
//     request to the class keys; a plugin that reads anything more must append it.
package framework
