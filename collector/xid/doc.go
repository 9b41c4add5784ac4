// Package xid reads NVIDIA Xid errors from the kernel log.
//
// The driver prints every Xid as an NVRM line,
//
//	NVRM: Xid (PCI:0000:9b:00): 119, pid=2024380, name=nvidia-smi, Timeout after 6s …
//
// and, when it loads, one line per GPU that maps the PCI address to the GPU's UUID,
//
//	NVRM: GPU at PCI:0000:9b:00: GPU-509665ad-b600-ac93-3616-d754b23d636d
//
// The kernel log is the source of truth for Xids because NVML's event API misses
// some of them (79, 119, 120 and 62 among them). ParseLine understands those lines
// whatever prefix the log reader put in front of them: /dev/kmsg records, dmesg
// timestamps (seconds since boot, ctime or ISO) and journalctl.
package xid
