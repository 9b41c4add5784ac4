package framework

import (
	"encoding/binary"
	"math"

	"github.com/gpuwatch/gpuwatch/scheduler/snapshot"
)

// Classifier is implemented by a plugin that says what it reads, so that the
// engine may evaluate nodes in classes: nodes whose keys are equal byte for byte
// are evaluated once and share the outcome. A plugin that implements it promises
// that its outcome on a node (verdict, the GPUs it leaves usable or picks, its
// score and, without Candidate.Explain, its reason) depends only on
//
//   - what AppendNodeKey appends of the node (what is fixed for the snapshot),
//   - what AppendRequestKey appends of the request,
//   - the node's free milli-GPU per GPU (Candidate.Free) and the number of its
//     GPUs, Candidate.Need and Candidate.Take, which the engine keys itself,
//   - the free milli-GPU of the node's leaf (Cycle.LeafFree) and the lowest tier
//     the node shares with a Request.Near node, which the engine keys itself too
//     (a plugin reading the leaf appends the node's Leaf).
//
// The engine groups only when every filter, the picker and every scorer is a
// Classifier. A plugin that reads anything else (names, labels, the time) must
// not implement it, or must append that too.
type Classifier interface {
	Plugin
	AppendNodeKey(k Key, n *snapshot.Node) Key
	AppendRequestKey(k Key, req *Request) Key
}

// Key is a class key being built. Its methods append varints, fixed-width or
// length-prefixed values, none of which is the beginning of another, so that two
// different sequences of values never give the same bytes. Keys are short: the
// engine interns one per node.
type Key []byte

// Uint appends v.
func (k Key) Uint(v uint64) Key { return binary.AppendUvarint(k, v) }

// Int appends v.
func (k Key) Int(v int64) Key { return binary.AppendVarint(k, v) }

// Bool appends v.
func (k Key) Bool(v bool) Key {
	if v {
		return append(k, 1)
	}
	return append(k, 0)
}

// Float32 appends v's bits: NaN (unknown) and every value are told apart.
func (k Key) Float32(v float32) Key {
	return binary.LittleEndian.AppendUint32(k, math.Float32bits(v))
}

// Str appends s, length first.
func (k Key) Str(s string) Key {
	return append(binary.AppendUvarint(k, uint64(len(s))), s...)
}

// GPUs appends a set of GPU positions.
func (k Key) GPUs(s snapshot.GPUSet) Key { return k.Uint(uint64(s)) }
