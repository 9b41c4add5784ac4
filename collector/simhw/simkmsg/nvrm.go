package simkmsg

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// nvrmLevel is the printk level of NVRM lines: dmesg --decode shows Xid lines as
// "kern  :warn  :" (leptonai/gpud testdata, driver 550.90.07).
const nvrmLevel = LevelWarning

// NVRMBusID formats a PCI address the way the driver prints it in NVRM lines:
// domain:bus:device in lower-case hex, without the function ("0000:9b:00"). It
// accepts the canonical "0000:9b:00.0", NVML's "00000000:9B:00.0", the driver's
// own "0000:9b:00" and a "PCI:" prefix.
func NVRMBusID(pciBusID string) (string, error) {
	s := strings.TrimPrefix(strings.TrimSpace(pciBusID), "PCI:")
	if dot := strings.LastIndexByte(s, '.'); dot >= 0 {
		fn, err := strconv.ParseUint(s[dot+1:], 16, 8)
		if err != nil || fn > 7 {
			return "", fmt.Errorf("invalid PCI address %q: bad function", pciBusID)
		}
		s = s[:dot]
	}
	parts := strings.Split(s, ":")
	if len(parts) != 3 {
		return "", fmt.Errorf("invalid PCI address %q: want domain:bus:device.function like 0000:9b:00.0", pciBusID)
	}
	domain, err1 := strconv.ParseUint(parts[0], 16, 32)
	bus, err2 := strconv.ParseUint(parts[1], 16, 8)
	dev, err3 := strconv.ParseUint(parts[2], 16, 8)
	if err1 != nil || err2 != nil || err3 != nil || dev > 0x1f {
		return "", fmt.Errorf("invalid PCI address %q: want domain:bus:device.function like 0000:9b:00.0", pciBusID)
	}
	return fmt.Sprintf("%04x:%02x:%02x", domain, bus, dev), nil
}

// busID is NVRMBusID that keeps what it cannot parse, so a simulator bug shows up
// in the log instead of vanishing.
func busID(pciBusID string) string {
	if id, err := NVRMBusID(pciBusID); err == nil {
		return id
	}
	return strings.TrimPrefix(pciBusID, "PCI:")
}

// GPUAttached registers a GPU with the simulated driver: its PCI address, UUID
// ("GPU-509665ad-…") and board serial. The driver prints
//
//	NVRM: GPU at PCI:0000:9b:00: GPU-509665ad-b600-ac93-3616-d754b23d636d
//	NVRM: GPU Board Serial Number: 1650124014249
//
// once, right before the GPU's first Xid, so that is where these lines appear
// (at is unused until then and kept for symmetry with the other calls). Calling
// GPUAttached again, as after a GPU reset or a driver reload, re-arms the lines.
// GPUs get the driver's instance numbers (GPU0, GPU1, … in Xid 119 messages) in
// the order they are first attached.
func (l *Log) GPUAttached(at time.Time, pciBusID, uuid, serial string) {
	_ = at
	id := busID(pciBusID)
	l.mu.Lock()
	defer l.mu.Unlock()
	if g, ok := l.gpus[id]; ok {
		g.uuid, g.serial, g.logged = uuid, serial, false
		return
	}
	l.gpus[id] = &gpu{index: l.ngpus, uuid: uuid, serial: serial}
	l.ngpus++
}

// Xid logs an Xid error on the GPU at pciBusID, as the driver's krcReportXid
// prints it:
//
//	NVRM: Xid (PCI:0000:9b:00): 119, pid=2024380, name=nvidia-smi, <detail>
//
// pid <= 0 means no owning process: before R570 the driver prints
// "pid='<unknown>', name=<unknown>, ", from R570 it leaves the part out. detail ""
// uses DefaultDetail. Xid 79 is followed by the "GPU has fallen off the bus" line
// the driver prints with it, and Xid 154 with an empty detail announces the next
// recovery action (see RecoveryAction).
func (l *Log) Xid(at time.Time, pciBusID string, xid int, pid int, proc string, detail string) {
	id := busID(pciBusID)
	l.mu.Lock()
	defer l.mu.Unlock()
	at = l.clamp(at)
	if xid == 154 && detail == "" {
		from := l.actions[id]
		to := RecoveryGPUReset
		if from != RecoveryNone {
			to = RecoveryNodeReboot
		}
		detail = recoveryDetail(from, to)
		l.actions[id] = to
	}
	l.xidLocked(at, id, xid, l.xidPrefix(id, xid, pid, proc), l.detailLocked(id, xid, detail))
	if xid == 79 {
		l.appendLocked(at, nvrmLevel, "NVRM: GPU "+id+".0: GPU has fallen off the bus.")
	}
}

// xidLocked prints the mapping lines if due, then one Xid line. l.mu must be held.
func (l *Log) xidLocked(at time.Time, id string, xid int, prefix, detail string) {
	l.logUUIDOnceLocked(at, id)
	l.appendLocked(at, nvrmLevel, prefix+detail)
}

// xidPrefix returns "NVRM: Xid (PCI:0000:9b:00): 119, pid=…, name=…, ".
func (l *Log) xidPrefix(id string, xid, pid int, proc string) string {
	var owner string
	switch {
	case pid > 0:
		if proc == "" {
			proc = "<unknown>"
		}
		owner = "pid=" + strconv.Itoa(pid) + ", name=" + proc + ", "
	case l.major < 570:
		// R550 and before: kernel_rc.c initialises pid to "'<unknown>'".
		owner = "pid='<unknown>', name=<unknown>, "
	}
	return "NVRM: Xid (PCI:" + id + "): " + strconv.Itoa(xid) + ", " + owner
}

// logUUIDOnceLocked prints the GPU's mapping lines before its first Xid, as the
// driver's _krcLogUuidOnce does. l.mu must be held.
func (l *Log) logUUIDOnceLocked(at time.Time, id string) {
	g := l.gpus[id]
	if g == nil || g.logged {
		return
	}
	if g.uuid != "" {
		l.appendLocked(at, nvrmLevel, "NVRM: GPU at PCI:"+id+": "+g.uuid)
	}
	if g.serial != "" {
		l.appendLocked(at, nvrmLevel, "NVRM: GPU Board Serial Number: "+g.serial)
	}
	g.logged = true
}

// detailLocked returns detail, or the default message for xid when it is empty.
// l.mu must be held.
func (l *Log) detailLocked(id string, xid int, detail string) string {
	if detail != "" {
		return detail
	}
	index := 0
	if g := l.gpus[id]; g != nil {
		index = g.index
	}
	return l.defaultDetail(xid, index)
}

// Flood logs n Xid lines on one GPU, every apart, starting at at, cycling through
// details (DefaultDetail when none are given): the shape of an Xid storm, where
// one node printed 800,000 Xid 95 lines with 29 distinct messages. It costs
// O(min(n, capacity)): lines that a full ring would drop at once are counted,
// not formatted.
func (l *Log) Flood(at time.Time, pciBusID string, xid, n int, every time.Duration, pid int, proc string, details ...string) {
	if n <= 0 {
		return
	}
	id := busID(pciBusID)
	l.mu.Lock()
	defer l.mu.Unlock()
	at = l.clamp(at)
	if len(details) == 0 {
		details = []string{""}
	}
	msgs := make([]string, len(details))
	prefix := l.xidPrefix(id, xid, pid, proc)
	for i, d := range details {
		msgs[i] = prefix + l.detailLocked(id, xid, d)
	}
	l.logUUIDOnceLocked(at, id)
	first := 0
	if skip := n - l.capacity; skip > 0 {
		l.skipLocked(uint64(skip), at.Add(time.Duration(skip-1)*every))
		first = skip
	}
	for i := first; i < n; i++ {
		l.appendLocked(at.Add(time.Duration(i)*every), nvrmLevel, msgs[i%len(msgs)])
	}
}

// RecoveryAction is the driver's GPU recovery action (NVML's
// nvmlDeviceGetRecoveryAction values), announced by Xid 154.
type RecoveryAction int

// Recovery actions, with the names Xid 154 prints (NVIDIA Xid Catalog, Xid 154:
// "None", "GPU Reset Required", "Node Reboot Required", "Drain P2P",
// "Drain and Reset").
const (
	RecoveryNone          RecoveryAction = 0
	RecoveryGPUReset      RecoveryAction = 1
	RecoveryNodeReboot    RecoveryAction = 2
	RecoveryDrainP2P      RecoveryAction = 3
	RecoveryDrainAndReset RecoveryAction = 4
)

// String returns the name Xid 154 prints for a.
func (a RecoveryAction) String() string {
	switch a {
	case RecoveryNone:
		return "None"
	case RecoveryGPUReset:
		return "GPU Reset Required"
	case RecoveryNodeReboot:
		return "Node Reboot Required"
	case RecoveryDrainP2P:
		return "Drain P2P"
	case RecoveryDrainAndReset:
		return "Drain and Reset"
	}
	return "Unknown"
}

func recoveryDetail(from, to RecoveryAction) string {
	return fmt.Sprintf("GPU recovery action changed from 0x%x (%s) to 0x%x (%s)", int(from), from, int(to), to)
}

// RecoveryAction logs Xid 154 for the GPU at pciBusID, changing its recovery
// action from the last one announced (None at first) to to:
//
//	NVRM: Xid (PCI:0000:9b:00): 154, GPU recovery action changed from 0x0 (None) to 0x1 (GPU Reset Required)
//
// Xid 154 has no owning process. The action is remembered per GPU until the next
// call; announce a GPU that was reset back to None with RecoveryNone.
func (l *Log) RecoveryAction(at time.Time, pciBusID string, to RecoveryAction) {
	id := busID(pciBusID)
	l.mu.Lock()
	defer l.mu.Unlock()
	at = l.clamp(at)
	from := l.actions[id]
	l.actions[id] = to
	l.xidLocked(at, id, 154, l.xidPrefix(id, 154, 0, ""), recoveryDetail(from, to))
}
