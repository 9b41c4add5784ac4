// Package simib simulates InfiniBand host channel adapters at the hardware boundary:
// it writes a /sys tree that the production InfiniBand source (and anything else
// built on github.com/prometheus/procfs) reads exactly as it reads a real node.
//
// An HCA is one mlx5 device (ConnectX-7 NDR by default) with its ports. The
// simulator drives it with traffic (Port.Advance) and faults (Port.SetDown,
// Port.Flap, Port.AddSymbolErrors, Port.Add), and HCA.WriteSysfs renders it:
//
//	<sysRoot>/class/infiniband/mlx5_0 -> ../../devices/pci0000:97/…/0000:9c:00.0/infiniband/mlx5_0
//	<sysRoot>/devices/pci0000:97/…/0000:9c:00.0/{vendor,device,class,numa_node,…}
//	<sysRoot>/devices/…/0000:9c:00.0/infiniband/mlx5_0/{fw_ver,board_id,hca_type,node_guid,…}
//	<sysRoot>/devices/…/infiniband/mlx5_0/device -> ../../../0000:9c:00.0
//	<sysRoot>/devices/…/infiniband/mlx5_0/ports/1/{state,phys_state,rate,link_layer,…}
//	<sysRoot>/devices/…/infiniband/mlx5_0/ports/1/counters/*     (IBA PortCounters)
//	<sysRoot>/devices/…/infiniband/mlx5_0/ports/1/hw_counters/*  (mlx5 Q counters)
//	<sysRoot>/bus/pci/devices/0000:9c:00.0 -> ../../../devices/pci0000:97/…/0000:9c:00.0
//
// The file set and formats follow a real H100 node (leptonai/gpud's
// sys-class-infiniband-h100.0 fixture) and the kernel's drivers/infiniband/core/sysfs.c:
//
//   - port_xmit_data and port_rcv_data count 4-byte words, as the hardware does;
//     procfs multiplies them by 4 to report bytes.
//   - The error counters have the widths of the IBA PortCounters attribute and
//     saturate at their maximum instead of wrapping (symbol_error 16 bits,
//     link_downed 8 bits, excessive_buffer_overrun_errors 4 bits, …), as real
//     ports do: the H100 fixture's excessive_buffer_overrun_errors reads 15, the
//     4-bit maximum. Data and packet counters are the 64-bit extended counters.
//   - Every counter is monotone: nothing here resets or decrements one.
//
// Writes are atomic per file (write a staging file under <sysRoot>/.simib-staging,
// then rename over the target), so a concurrent reader never sees a torn value, and
// after the first WriteSysfs only files whose content changed are rewritten.
//
// All methods are safe for concurrent use.
package simib
