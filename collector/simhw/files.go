package simhw

import (
	"fmt"
	"os"

	"github.com/gpuwatch/gpuwatch/collector/simhw/simkmsg"
)

// materialize writes the node's files under <Root>/<node>: the PCI tree of the
// GPUs and HCAs (once) and the InfiniBand sysfs tree when sysfs is set (only changed files are rewritten, each atomically) and
// the kernel log records logged since the last call, appended to kmsg.log in
// /dev/kmsg format. Process files are written by StartJob and removed by StopJob.
func (n *Node) materialize(sysfs bool) error {
	if n.dir == "" {
		return nil
	}
	n.fileMu.Lock()
	defer n.fileMu.Unlock()
	if err := os.MkdirAll(n.ProcRoot(), 0o755); err != nil {
		return fmt.Errorf("materialize %s: %w", n.name, err)
	}
	if sysfs {
		if err := n.writePCITree(n.SysRoot()); err != nil {
			return fmt.Errorf("materialize %s: %w", n.name, err)
		}
		for _, h := range n.hcas {
			if err := h.WriteSysfs(n.SysRoot()); err != nil {
				return fmt.Errorf("materialize %s: %w", n.name, err)
			}
		}
	}
	if err := n.kmsg.AppendTo(n.KmsgPath(), simkmsg.FormatKmsg); err != nil {
		return fmt.Errorf("materialize %s: %w", n.name, err)
	}
	return nil
}
