package simkmsg

import (
	"fmt"
	"strings"
	"time"
)

// SXid is an NVSwitch error the simulator can log, with the severity and text
// the driver prints for it. The texts are from real HGX logs and the Fabric
// Manager user guide's SXid list.
type SXid struct {
	Code    int
	Fatal   bool
	Message string // after "Link NN "
}

// KnownSXids are the SXids the simulator logs.
var KnownSXids = []SXid{
	{12028, false, "egress non-posted PRIV error (First)"},
	{20009, false, "RX Short Error Rate"},
	{20034, true, "LTSSM Fault Up"},
	{24007, true, "sourcetrack timeout error (First)"},
}

// LookupSXid returns a known SXid.
func LookupSXid(code int) (SXid, bool) {
	for _, s := range KnownSXids {
		if s.Code == code {
			return s, true
		}
	}
	return SXid{}, false
}

// NVSwitchError logs an SXid of NVSwitch instance inst (nvidia-nvswitch<inst>)
// at pciBusID (canonical form, "0000:06:00.0") on port link, as the NVSwitch
// driver prints it: the error line
// with its severity, then the detail lines that belong to it,
//
//	nvidia-nvswitch1: SXid (PCI:0000:06:00.0): 20034, Fatal, Link 48 LTSSM Fault Up
//	nvidia-nvswitch1: SXid (PCI:0000:06:00.0): 20034, Severity 1 Engine instance 48 Sub-engine instance 00
//	nvidia-nvswitch1: SXid (PCI:0000:06:00.0): 20034, Data {0x10000000, 0x10000000, 0x00000000, …}
func (l *Log) NVSwitchError(at time.Time, inst int, pciBusID string, s SXid, link int) {
	addr := strings.ToLower(pciBusID)
	sev, sevN := "Non-fatal", 0
	if s.Fatal {
		sev, sevN = "Fatal", 1
	}
	prefix := fmt.Sprintf("nvidia-nvswitch%d: SXid (PCI:%s): %d, ", inst, addr, s.Code)
	l.mu.Lock()
	defer l.mu.Unlock()
	at = l.clamp(at)
	l.appendLocked(at, LevelErr, fmt.Sprintf("%s%s, Link %02d %s", prefix, sev, link, s.Message))
	l.appendLocked(at, LevelErr, fmt.Sprintf("%sSeverity %d Engine instance %02d Sub-engine instance 00", prefix, sevN, link))
	l.appendLocked(at, LevelErr, prefix+"Data {0x10000000, 0x10000000, 0x00000000, 0x10000000, 0x00000000, 0x00000000, 0x00000000, 0x00000000, 0x00000000}")
}

// GPUInitFailed logs the driver failing to initialise the GPU at pciBusID
// (device minor number minor), which then is not in NVML's list:
//
//	NVRM: GPU 0000:5d:00.0: RmInitAdapter failed! (0x26:0x56:1474)
//	NVRM: GPU 0000:5d:00.0: rm_init_adapter failed, device minor number 3
func (l *Log) GPUInitFailed(at time.Time, pciBusID string, minor int) {
	id := busID(pciBusID)
	l.mu.Lock()
	defer l.mu.Unlock()
	at = l.clamp(at)
	l.appendLocked(at, LevelErr, "NVRM: GPU "+id+".0: RmInitAdapter failed! (0x26:0x56:1474)")
	l.appendLocked(at, LevelErr, fmt.Sprintf("NVRM: GPU %s.0: rm_init_adapter failed, device minor number %d", id, minor))
}
