package framework

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/gpuwatch/gpuwatch/telemetry"
)

func TestNormalize(t *testing.T) {
	tests := []struct {
		name            string
		req             Request
		gpus, nodes, pn int
		err             string
	}{
		{name: "flexible", req: Request{GPUs: 3}, gpus: 3},
		{name: "nodes × per node", req: Request{Nodes: 4, GPUsPerNode: 8}, gpus: 32, nodes: 4, pn: 8},
		{name: "gpus over nodes", req: Request{GPUs: 16, Nodes: 2}, gpus: 16, nodes: 2, pn: 8},
		{name: "gpus by per node", req: Request{GPUs: 16, GPUsPerNode: 4}, gpus: 16, nodes: 4, pn: 4},
		{name: "uneven", req: Request{GPUs: 3, Nodes: 2}, err: "split evenly"},
		{name: "inconsistent", req: Request{GPUs: 3, Nodes: 2, GPUsPerNode: 2}, err: "≠ nodes 2"},
		{name: "nothing", req: Request{}, err: "gpus 0"},
		{name: "milli", req: Request{GPUs: 1, Milli: 1001}, err: "milli 1001"},
		{name: "per node too big", req: Request{Nodes: 1, GPUsPerNode: 65}, err: "gpus_per_node 65"},
		{name: "preferred above required", req: Request{GPUs: 1, Required: telemetry.TierLeaf, Preferred: telemetry.TierSpine}, err: "above required_tier"},
		{name: "node tier with two nodes", req: Request{Nodes: 2, GPUsPerNode: 1, Required: telemetry.TierNode}, err: "nodes 1"},
		{name: "huge", req: Request{Nodes: MaxGangGPUs + 1, GPUsPerNode: 64}, err: "nodes"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.req.Normalize()
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			r := tc.req
			if r.GPUs != tc.gpus || r.Nodes != tc.nodes || r.GPUsPerNode != tc.pn || r.Milli != 1000 || r.Required != telemetry.TierCluster {
				t.Errorf("normalized to %+v", r)
			}
		})
	}
}

func TestModelMatches(t *testing.T) {
	r := Request{GPUs: 1, Model: " H100 "}
	if err := r.Normalize(); err != nil {
		t.Fatal(err)
	}
	if !r.ModelMatches("NVIDIA H100 80GB HBM3") || r.ModelMatches("NVIDIA A100-SXM4-80GB") {
		t.Error("model matching")
	}
}

// FuzzRequestJSON decodes arbitrary JSON as a Request: Normalize either refuses it or
// leaves a consistent request.
func FuzzRequestJSON(f *testing.F) {
	for _, s := range []string{`{"gpus":8}`, `{"nodes":4,"gpus_per_node":8,"required_tier":"leaf"}`,
		`{"gpus":1,"milli":250,"lease":"90s"}`, `{"gpus":16,"nodes":3}`, `{"lease":"-1s","gpus":1}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var r Request
		if json.Unmarshal(b, &r) != nil {
			return
		}
		if r.Normalize() != nil {
			return
		}
		if r.GPUs < 1 || r.GPUs > MaxGangGPUs || r.Milli < 1 || r.Milli > 1000 || r.Lease < 0 {
			t.Fatalf("accepted %+v", r)
		}
		if r.Fixed() && r.Nodes*r.GPUsPerNode != r.GPUs {
			t.Fatalf("inconsistent shape %+v", r)
		}
		if r.Preferred > r.Required || r.Required < telemetry.TierNode || r.Required > telemetry.TierCluster {
			t.Fatalf("bad tiers %+v", r)
		}
		again := r
		if err := again.Normalize(); err != nil || again.GPUs != r.GPUs || again.Nodes != r.Nodes {
			t.Fatalf("normalize not idempotent: %v %+v", err, again)
		}
	})
}
