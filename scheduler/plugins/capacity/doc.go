// Package capacity is the placement filter for free room: it keeps the GPUs with at
// least the requested milli-GPU free (after allocations and reservations), rejects a
// node left with too few, and for exclusive requests accepts only nodes with nothing
// allocated or reserved.
package capacity
