package placement

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/gpuwatch/gpuwatch/scheduler/snapshot"
)

// ReservedGPU is one GPU (or share of one) a reservation holds.
type ReservedGPU struct {
	Node  string `json:"node"`
	GPU   int    `json:"gpu"` // NVML index
	Milli int    `json:"milli"`
}

// Reservation is a lease on GPUs made by a decision in reserve mode; its ID is the
// decision's ID.
type Reservation struct {
	ID      string        `json:"id"`
	JobID   string        `json:"job_id,omitempty"`
	Created time.Time     `json:"created"`
	Expires time.Time     `json:"expires"`
	GPUs    []ReservedGPU `json:"gpus"`
}

type reservation struct {
	Reservation
	flat []int32 // flat GPU number in the current snapshot, -1 when gone
	leaf []int32 // leaf of that GPU's node, -1 unknown
}

// remap finds the reservation's GPUs in snap.
func (r *reservation) remap(snap *snapshot.Snapshot) {
	r.flat = r.flat[:0]
	r.leaf = r.leaf[:0]
	for _, g := range r.GPUs {
		f, l := int32(-1), int32(-1)
		if i, ok := snap.Lookup(g.Node); ok {
			n := snap.Node(i)
			for p := range n.GPUs {
				if n.GPUs[p].Index == g.GPU {
					f, l = int32(n.First+p), n.Leaf
				}
			}
		}
		r.flat = append(r.flat, f)
		r.leaf = append(r.leaf, l)
	}
}

// apply adds (sign +1) or removes (sign -1) the reservation's GPUs to the free
// overlay. Free may go below zero when a new snapshot shows a reserved GPU allocated
// elsewhere; releasing restores it exactly.
func (e *Engine) apply(r *reservation, sign int) {
	for k, f := range r.flat {
		if f < 0 {
			continue
		}
		m := int32(sign * r.GPUs[k].Milli)
		e.free[f] += m
		if l := r.leaf[k]; l >= 0 && int(l) < len(e.leafFree) {
			e.leafFree[l] += int64(m)
		}
	}
	if e.grouped {
		e.cls.touched(e.snap, e.free, r.flat)
	}
}

// expire ends the leases due by now; cheap when none is.
func (e *Engine) expire(now time.Time) {
	if now.UnixNano() < e.expiry.Load() {
		return
	}
	e.mu.Lock()
	e.expireLocked(now)
	e.mu.Unlock()
}

func (e *Engine) expireLocked(now time.Time) {
	next := maxNanos
	for id, r := range e.res {
		if !now.Before(r.Expires) {
			e.apply(r, +1)
			delete(e.res, id)
			e.metrics.expired.Inc()
			e.opts.Logger.Debug("placement reservation expired", "reservation", id, "job", r.JobID)
			continue
		}
		next = min(next, r.Expires.UnixNano())
	}
	e.expiry.Store(next)
}

func (e *Engine) noteExpiry(t time.Time) {
	for {
		cur := e.expiry.Load()
		if t.UnixNano() >= cur || e.expiry.CompareAndSwap(cur, t.UnixNano()) {
			return
		}
	}
}

// Release ends reservation id and frees its GPUs.
func (e *Engine) Release(id string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	r, ok := e.res[id]
	if !ok {
		return fmt.Errorf("release %q: %w", id, ErrUnknownReservation)
	}
	e.apply(r, +1)
	delete(e.res, id)
	e.metrics.released.Inc()
	return nil
}

// Extend sets reservation id to end lease from now (capped at Options.MaxLease) and
// returns the new end.
func (e *Engine) Extend(id string, lease time.Duration) (time.Time, error) {
	if lease <= 0 {
		return time.Time{}, fmt.Errorf("extend %q: lease %v: want > 0", id, lease)
	}
	now := e.opts.Now()
	e.expire(now)
	e.mu.Lock()
	defer e.mu.Unlock()
	r, ok := e.res[id]
	if !ok {
		return time.Time{}, fmt.Errorf("extend %q: %w", id, ErrUnknownReservation)
	}
	r.Expires = now.Add(min(lease, e.opts.MaxLease))
	e.noteExpiry(r.Expires)
	return r.Expires, nil
}

// Reservations returns the live reservations, oldest first.
func (e *Engine) Reservations() []Reservation {
	e.expire(e.opts.Now())
	e.mu.RLock()
	defer e.mu.RUnlock()
	out := make([]Reservation, 0, len(e.res))
	for _, r := range e.res {
		v := r.Reservation
		v.GPUs = slices.Clone(v.GPUs)
		out = append(out, v)
	}
	slices.SortFunc(out, func(a, b Reservation) int {
		if c := a.Created.Compare(b.Created); c != 0 {
			return c
		}
		return cmp.Compare(a.ID, b.ID)
	})
	return out
}

// ReservedMilli returns the milli-GPU reservations hold on GPU index of node, for
// tests and the UI.
func (e *Engine) ReservedMilli(node string, index int) int {
	e.mu.RLock()
	defer e.mu.RUnlock()
	sum := 0
	for _, r := range e.res {
		for k, g := range r.GPUs {
			if g.Node == node && g.GPU == index && r.flat[k] >= 0 {
				sum += g.Milli
			}
		}
	}
	return sum
}

// FreeMilli returns the free milli-GPU of GPU index of node: the snapshot's minus
// reservations (below 0 when a later snapshot shows a reserved GPU taken).
func (e *Engine) FreeMilli(node string, index int) (int, bool) {
	e.mu.RLock()
	defer e.mu.RUnlock()
	i, ok := e.snap.Lookup(node)
	if !ok {
		return 0, false
	}
	n := e.snap.Node(i)
	for p := range n.GPUs {
		if n.GPUs[p].Index == index {
			return int(e.free[n.First+p]), true
		}
	}
	return 0, false
}
