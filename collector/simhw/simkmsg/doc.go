// Package simkmsg simulates the kernel log at the hardware boundary: a bounded,
// append-only ring of printk records like the kernel's, into which a simulated
// NVIDIA driver prints NVRM lines (Xid errors, the GPU-at-PCI mapping, the board
// serial), and which renders those records in the forms production code reads:
// /dev/kmsg records, dmesg output (plain, -T, --time-format iso, --decode) and
// syslog or journal lines in a file it appends to, like /var/log/kern.log.
//
//	sim ──Xid/GPUAttached/Printf──▶ Log (ring, seq) ──Since──▶ a /dev/kmsg reader
//	                                      └──AppendTo(path, format)──▶ kern.log for a tailer
//
// The NVRM line formats follow the driver source (NVIDIA/open-gpu-kernel-modules,
// src/nvidia/src/kernel/gpu/rc/kernel_rc.c) and real logs (leptonai/gpud testdata):
//
//	NVRM: GPU at PCI:0000:9b:00: GPU-509665ad-b600-ac93-3616-d754b23d636d
//	NVRM: GPU Board Serial Number: 1650124014249
//	NVRM: Xid (PCI:0000:9b:00): 119, pid=2024380, name=nvidia-smi, Timeout after 6s …
//	NVRM: Xid (PCI:0000:19:00): 48, pid='<unknown>', name=<unknown>, An uncorrectable …   (R550)
//	NVRM: Xid (PCI:0000:19:00): 48, An uncorrectable …                                    (R570+)
//
// The driver prints the mapping lines once per GPU, just before that GPU's first
// Xid (_krcLogUuidOnce), not at load; GPUAttached registers the GPU and the lines
// appear where the driver would print them.
//
// All methods of Log are safe for concurrent use.
package simkmsg
