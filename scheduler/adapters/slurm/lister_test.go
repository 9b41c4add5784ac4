package slurm

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/scheduler/drain"
)

// TestOwnedDrains reads a real cluster's `sinfo --json` (testdata/real: gpu01
// drained by gpuwatch, gpu02 draining for an operator, gpu03 rebooting for
// gpuwatch, gpu04 down for an operator): only gpuwatch's two are listed, the
// reboot with its flag and without slurmctld's " : reboot issued".
func TestOwnedDrains(t *testing.T) {
	fixture, err := filepath.Abs("testdata/real/sinfo-reboot.json")
	if err != nil {
		t.Fatal(err)
	}
	a := Actuator{Scontrol: fakeBin(t, map[string]string{"scontrol": "exit 1", "sinfo": "cat " + fixture})}
	got, err := a.OwnedDrains(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := []drain.OwnedDrain{
		{Node: "gpu01", Reason: "gpuwatch: xid79 gpu=GPU-1b8b action=RESTART_BM", Since: time.Unix(1795457169, 0)},
		{Node: "gpu03", Reason: "gpuwatch: xid154 action=REBOOT", Reboot: true, Since: time.Unix(1795457170, 0)},
	}
	if len(got) != len(want) {
		t.Fatalf("OwnedDrains = %+v, want %+v", got, want)
	}
	for i := range want {
		if g, w := got[i], want[i]; g.Node != w.Node || g.Reason != w.Reason || g.Reboot != w.Reboot || !g.Since.Equal(w.Since) {
			t.Errorf("drain %d = %+v, want %+v", i, g, w)
		}
	}
}
