// Package health is the placement step that keeps work off sick GPUs: as a filter it
// drops GPUs whose last known state is not schedulable (draining, drained) and GPUs
// or nodes the drain controller excludes, and rejects a node left with too few; as a
// scorer it prefers GPUs in the plain healthy state over suspect or probation ones.
package health
