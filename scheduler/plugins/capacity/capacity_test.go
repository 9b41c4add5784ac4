package capacity

import (
	"context"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/scheduler/framework"
	"github.com/gpuwatch/gpuwatch/scheduler/snapshot"
)

func TestFilter(t *testing.T) {
	s, err := snapshot.Synthetic(snapshot.SyntheticSpec{Nodes: 1, GPUsPerNode: 4, Leaves: 1, Now: time.Unix(1e9, 0)})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		free   []int32
		req    framework.Request
		need   int
		ok     bool
		usable snapshot.GPUSet
	}{
		{"whole GPUs", []int32{1000, 0, 1000, 500}, framework.Request{Milli: 1000}, 2, true, 0b0101},
		{"too few whole", []int32{1000, 0, 1000, 500}, framework.Request{Milli: 1000}, 3, false, 0b0101},
		{"fraction fits shared GPU", []int32{1000, 0, 1000, 500}, framework.Request{Milli: 500}, 3, true, 0b1101},
		{"exclusive on used node", []int32{1000, 1000, 1000, 999}, framework.Request{Milli: 1000, Exclusive: true}, 1, false, 0b1111},
		{"exclusive on empty node", []int32{1000, 1000, 1000, 1000}, framework.Request{Milli: 1000, Exclusive: true}, 4, true, 0b1111},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var c framework.Candidate
			c.Reset(&framework.Cycle{Snap: s, Free: tc.free}, 0)
			c.Need = tc.need
			st := New().Filter(context.Background(), &tc.req, &c)
			if st.OK() != tc.ok || c.Usable != tc.usable {
				t.Errorf("status %v usable %04b, want ok=%v usable %04b", st, c.Usable, tc.ok, tc.usable)
			}
		})
	}
}
