//go:build linux

package simib

import (
	"os"
	"reflect"
	"testing"
	"time"

	"github.com/prometheus/procfs/sysfs"
	"pgregory.net/rapid"
)

// TestCountersMonotoneUnderRandomFaults drives a port with random sequences of
// traffic and faults and reads it back through procfs after every step: no counter
// ever goes back, and a port that is down moves no data.
func TestCountersMonotoneUnderRandomFaults(t *testing.T) {
	base := ramDir(t)
	rapid.Check(t, func(rt *rapid.T) {
		root, err := os.MkdirTemp(base, "prop-")
		if err != nil {
			rt.Fatal(err)
		}
		defer os.RemoveAll(root)

		h := NewConnectX7("mlx5_0", "0000:1a:00.0", 0, rapid.Int64().Draw(rt, "seed"))
		p := h.Ports[0]
		read := func() sysfs.InfiniBandPort {
			if err := h.WriteSysfs(root); err != nil {
				rt.Fatal(err)
			}
			fs, err := sysfs.NewFS(root)
			if err != nil {
				rt.Fatal(err)
			}
			d, err := fs.InfiniBandDevice("mlx5_0")
			if err != nil {
				rt.Fatal(err)
			}
			return d.Ports[1]
		}
		prev := read()
		// step runs act and checks the invariants. traffic is false for Add, which
		// injects counts directly (a down port's data may be preloaded).
		step := func(traffic bool, act func()) {
			wasUp := p.Up()
			act()
			cur := read()
			for _, pair := range [][2]any{
				{prev.Counters, cur.Counters},
				{prev.HwCounters, cur.HwCounters},
			} {
				if field, before, after, ok := firstDecrease(pair[0], pair[1]); !ok {
					rt.Fatalf("%s went from %v to %v", field, before, after)
				}
			}
			if traffic && !wasUp && (*cur.Counters.PortXmitData != *prev.Counters.PortXmitData ||
				*cur.Counters.PortRcvData != *prev.Counters.PortRcvData) {
				rt.Fatalf("down port moved data: xmit %d→%d, rcv %d→%d",
					*prev.Counters.PortXmitData, *cur.Counters.PortXmitData,
					*prev.Counters.PortRcvData, *cur.Counters.PortRcvData)
			}
			if up := p.Up(); up != (cur.StateID == 4 && cur.PhysStateID == 5) {
				rt.Fatalf("Up() = %v but sysfs says %d: %s / %d: %s", up, cur.StateID, cur.State, cur.PhysStateID, cur.PhysState)
			}
			prev = cur
		}

		rt.Repeat(map[string]func(*rapid.T){
			"advance": func(rt *rapid.T) {
				dt := time.Duration(rapid.Int64Range(0, int64(10*time.Second)).Draw(rt, "dt"))
				tx := rapid.Uint64Range(0, 1<<40).Draw(rt, "tx")
				rx := rapid.Uint64Range(0, 1<<40).Draw(rt, "rx")
				step(true, func() { p.Advance(dt, tx, rx) })
			},
			"setDown": func(rt *rapid.T) {
				down := rapid.Bool().Draw(rt, "down")
				step(true, func() { p.SetDown(down) })
			},
			"setDisabled": func(rt *rapid.T) {
				disabled := rapid.Bool().Draw(rt, "disabled")
				step(true, func() { p.SetDisabled(disabled) })
			},
			"flap": func(rt *rapid.T) {
				step(true, p.Flap)
			},
			"symbolErrors": func(rt *rapid.T) {
				n := rapid.Uint64Range(0, 1<<17).Draw(rt, "n")
				step(true, func() { p.AddSymbolErrors(n) })
			},
			"add": func(rt *rapid.T) {
				name := rapid.SampledFrom(CounterNames()).Draw(rt, "counter")
				n := rapid.Uint64().Draw(rt, "n")
				step(false, func() {
					if err := p.Add(name, n); err != nil {
						rt.Fatal(err)
					}
				})
			},
		})
	})
}

// firstDecrease compares two procfs counter structs field by field and returns the
// first pointer field that is set in before but missing or smaller in after.
func firstDecrease(before, after any) (field string, b, a any, ok bool) {
	vb, va := reflect.ValueOf(before), reflect.ValueOf(after)
	for i := range vb.NumField() {
		fb, fa := vb.Field(i), va.Field(i)
		if fb.Kind() != reflect.Pointer || fb.IsNil() {
			continue
		}
		name := vb.Type().Field(i).Name
		if fa.IsNil() {
			return name, fb.Elem().Uint(), nil, false
		}
		if fa.Elem().Uint() < fb.Elem().Uint() {
			return name, fb.Elem().Uint(), fa.Elem().Uint(), false
		}
	}
	return "", nil, nil, true
}
