// Package xid is gpuwatch's Xid source: it reads NVIDIA Xid errors from the kernel
// log, merges them with NVML's Xid events and counts them.
//
// The driver prints every Xid as an NVRM line,
//
//	NVRM: Xid (PCI:0000:9b:00): 119, pid=2024380, name=nvidia-smi, Timeout after 6s …
//
// and, before a GPU's first Xid, one line that maps the PCI address to the GPU's
// UUID,
//
//	NVRM: GPU at PCI:0000:9b:00: GPU-509665ad-b600-ac93-3616-d754b23d636d
//
// The NVSwitch driver prints NVSwitch errors (SXids) the same way,
//
//	nvidia-nvswitch1: SXid (PCI:0000:06:00.0): 20034, Fatal, Link 48 LTSSM Fault Up
//
// followed by detail lines for the same SXid (Severity, Data) that are not events
// of their own.
//
// The kernel log is the source of truth for Xids because NVML's event API misses
// some of them (79, 119, 120 and 62 among them). ParseLine understands those lines
// whatever prefix the log reader put in front of them: /dev/kmsg records, dmesg
// timestamps (seconds since boot, ctime or ISO) and journalctl. ParseKmsgRecord
// reads one /dev/kmsg record.
//
// # The source
//
// New builds a Source; Run tails the log in the background: /dev/kmsg record by
// record (EPIPE and sequence gaps count lost records), or a regular file by
// polling (truncation and rotation handled). Each line's own timestamp is used:
// kmsg's microseconds since boot plus the boot time, or the dmesg/journalctl
// stamp. The Source is also the collector.XidSink the NVML source sends its Xid
// events to. Then, per event:
//
//   - Mapping: the PCI address to the inventory's GPU index; a GPU the inventory
//     lacks keeps its PCI address (and its UUID from the "GPU at PCI" line) and is
//     counted with gpu_index "".
//   - Merge: an NVML event and a live kernel-log line for the same GPU and Xid
//     arriving within MergeWindow of each other are one event, carrying the log
//     line's message. An NVML event waits up to MergeWindow for its line; then it
//     is accepted alone. Lines from the log's history never merge.
//   - Flood dedup: an event identical in GPU, Xid and message to one counted less
//     than DedupWindow before (by the events' own times) is a repeat: counted in
//     gpuwatch_xid_suppressed_lines_total, not forwarded. The window runs from the
//     last counted occurrence, so a flood that lasts counts once per window. The
//     table is bounded (MaxDedupEntries).
//   - Accepted events increment gpuwatch_xid_errors_total{gpu_index, xid, action},
//     where action is what NVIDIA's Xid catalog resolves for the event on its own
//     (telemetry.ClassifyXid: the catalog's action, the NVLink5 register decode
//     of Xids 144–150, the action an Xid 154 announces; absent where the catalog
//     gives none), set DCGM_FI_DEV_XID_ERRORS (the last Xid of the GPU) and go to
//     Options.Sink.
//   - SXids are deduplicated the same way (NVSwitch, SXid, link and message),
//     counted in gpuwatch_nvswitch_sxid_errors_total{nvswitch, pci_bus_id, sxid,
//     fatal} and go to Options.SXidSink.
//
// Collect only reads what the reader accumulated; it never waits for the log.
package xid
