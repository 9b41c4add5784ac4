// Package infiniband is the agent's InfiniBand source: it reads the ports of every
// HCA under <sysfs>/class/infiniband and emits node_exporter's node_infiniband_*
// series (same names, help, label keys and values, data counters in octets) plus
// gpuwatch_infiniband_* error counters node_exporter leaves out and the mlx5
// hw_counters.
//
// The source reads the files itself rather than through procfs's InfiniBandClass,
// for three reasons that are node_exporter bugs:
//
//   - procfs reads every device before a filter can drop one; here an excluded
//     device is never opened (node_exporter #3823);
//   - in procfs one malformed or unreadable counter file fails the whole device;
//     here it loses that one value, and the error names the file (node_exporter
//     #3265);
//   - procfs reads every file on every scrape; here the health schedule
//     (CollectHealth) reads only port state, physical state, rate and the error
//     counters, and the full schedule (Collect) reads the traffic counters,
//     hw_counters and device identity.
//
// Reading: the health schedule's files (about a hundred on an HGX H100 node, read
// every second) are kept open between collections and read again from offset 0,
// which makes sysfs ask the driver again: one pread each instead of an open, a
// read and a close. A kept file whose link count dropped to 0 (removed, or
// replaced by a rename, as the simulated hardware writes) or whose read fails is
// opened again. The device list is kept too and listed again by every full
// collection, so an HCA that appears later is read from the next full
// collection on. Source.Close closes the kept files. The files kept open by all
// the sources of a process are bounded by a quarter of its file-descriptor limit
// (a process running a thousand agents, as the soak does, keeps what fits and
// reads the rest with open, read, close). The full schedule's files
// are opened, read and closed each time, relative to their port's directory.
//
// Values are those procfs (and so node_exporter) reports for the same files:
// port_rcv_data and port_xmit_data are multiplied by 4 (sysfs counts 4-byte
// words), "N/A (no PMA)" and absent files produce no sample, and rate is the
// leading Gb/sec figure times 125000000. The legacy counters_ext/ directory
// (kernels before 4.5) is not read: the catalog has no node_infiniband_legacy_*
// series.
//
// Schedules:
//
//	CollectHealth: node_infiniband_state_id, node_infiniband_physical_state_id,
//	  node_infiniband_rate_bytes_per_second, node_infiniband_link_downed_total,
//	  node_infiniband_link_error_recovery_total, node_infiniband_port_errors_received_total,
//	  node_infiniband_port_discards_{received,transmitted}_total,
//	  node_infiniband_port_constraint_errors_{received,transmitted}_total,
//	  gpuwatch_infiniband_{symbol_errors,local_link_integrity_errors,
//	  excessive_buffer_overrun_errors,remote_physical_errors_received}_total
//	Collect: node_infiniband_info, data, packet, unicast, multicast and
//	  transmit-wait counters, gpuwatch_infiniband_hw_statistic_total
package infiniband
