package localslurm

import (
	"testing"
	"time"
)

func TestOptionsDefaultsAndValidation(t *testing.T) {
	o, err := Options{}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	if o.Nodes != 4 || o.GPUsPerNode != 8 || o.GPUType != "h100" || o.Partition != "gpu" || o.CPUsPerNode != 16 {
		t.Errorf("defaults: %+v", o)
	}
	if o.TopologyPlugin != "" {
		t.Errorf("default TopologyPlugin %q, want none", o.TopologyPlugin)
	}
	if o, err := (Options{TopologyConf: "SwitchName=s1 Nodes=gpu[01-04]\n"}).withDefaults(); err != nil || o.TopologyPlugin != "topology/tree" {
		t.Errorf("TopologyConf alone: TopologyPlugin %q, %v; want topology/tree", o.TopologyPlugin, err)
	}
	for _, bad := range []Options{
		{Nodes: 100}, {Nodes: -1}, {GPUsPerNode: 65}, {CPUsPerNode: 3}, {GPUType: "a b"},
		{Partition: "x,y"}, {ResumeTimeout: time.Millisecond}, {RebootDelay: -time.Second},
		{TopologyPlugin: "topology/block"}, {TopologyPlugin: "tree"},
		{TopologyConf: "SwitchName=s1 Nodes=gpu[01-04]\n", TopologyPlugin: "topology/none"},
		{FutureNodes: "node1 State=IDLE"}, {FutureNodes: "a=b"},
	} {
		if _, err := bad.withDefaults(); err == nil {
			t.Errorf("%+v: no error", bad)
		}
	}
}
