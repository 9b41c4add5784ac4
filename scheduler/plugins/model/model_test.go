package model

import (
	"context"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/scheduler/framework"
	"github.com/gpuwatch/gpuwatch/scheduler/snapshot"
)

func TestFilter(t *testing.T) {
	b := snapshot.NewBuilder(time.Unix(1e9, 0), time.Minute)
	b.AddNode(snapshot.NodeInput{Name: "mixed", GPUs: []snapshot.GPUInput{
		{Index: 0, Model: "NVIDIA H100 80GB HBM3", MemoryMiB: 81559},
		{Index: 1, Model: "NVIDIA A100-SXM4-40GB", MemoryMiB: 40960},
	}})
	s, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		req    framework.Request
		need   int
		ok     bool
		usable snapshot.GPUSet
	}{
		{"any", framework.Request{GPUs: 2}, 2, true, 0b11},
		{"h100", framework.Request{GPUs: 1, Model: "h100"}, 1, true, 0b01},
		{"two a100", framework.Request{GPUs: 2, Model: "A100"}, 2, false, 0b10},
		{"memory", framework.Request{GPUs: 1, MinMemoryMiB: 50000}, 1, true, 0b01},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.req.Normalize(); err != nil {
				t.Fatal(err)
			}
			var c framework.Candidate
			c.Reset(&framework.Cycle{Snap: s, Free: make([]int32, 2)}, 0)
			c.Need = tc.need
			st := New().Filter(context.Background(), &tc.req, &c)
			if st.OK() != tc.ok || c.Usable != tc.usable {
				t.Errorf("status %v usable %02b, want ok=%v %02b", st, c.Usable, tc.ok, tc.usable)
			}
		})
	}
}
