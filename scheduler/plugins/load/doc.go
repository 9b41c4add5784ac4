// Package load is the placement scorer for live telemetry: over the chosen GPUs, 0.5 ×
// (1 − mean measured utilization) + 0.25 × mean thermal headroom + 0.25 × mean power
// headroom. Stale values are left out and the weights of the rest renormalised; when
// every value is stale the score is a neutral 0.5, so the placement falls back to
// allocation-only behaviour instead of trusting old numbers.
package load
