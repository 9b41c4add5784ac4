package xid

import (
	"bufio"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/gpuwatch/gpuwatch/telemetry"
)

func TestParseLine(t *testing.T) {
	tests := []struct {
		name string
		line string
		want Line
		ok   bool
	}{
		{
			name: "dmesg ctime, pid and name",
			line: "[Sun Feb 23 16:24:18 2025] NVRM: Xid (PCI:0000:9b:00): 119, pid=2024380, name=nvidia-smi, Timeout after 6s of waiting for RPC response from GPU4 GSP! Expected function 103 (GSP_RM_ALLOC) (0x2081 0x4).",
			want: Line{Kind: KindXid, PCI: "0000:9b:00", Xid: 119, PID: 2024380, Process: "nvidia-smi",
				Message: "Timeout after 6s of waiting for RPC response from GPU4 GSP! Expected function 103 (GSP_RM_ALLOC) (0x2081 0x4)."},
			ok: true,
		},
		{
			name: "dmesg iso, unknown pid",
			line: "2024-11-15T12:02:03,498753+00:00 NVRM: Xid (PCI:0000:19:00): 63, pid='<unknown>', name=<unknown>, Row Remapper: New row (0x00000012bac1c3e0) marked for remapping, reset gpu to activate.",
			want: Line{Kind: KindXid, PCI: "0000:19:00", Xid: 63,
				Message: "Row Remapper: New row (0x00000012bac1c3e0) marked for remapping, reset gpu to activate."},
			ok: true,
		},
		{
			name: "kmsg record",
			line: "4,1234,5678901,-;NVRM: Xid (PCI:0000:38:00): 43, pid=2815167, name=pt_main_thread, Ch 00000008",
			want: Line{Kind: KindXid, PCI: "0000:38:00", Xid: 43, PID: 2815167, Process: "pt_main_thread", Message: "Ch 00000008"},
			ok:   true,
		},
		{
			name: "journalctl with facility prefix",
			line: "kern  :warn  : 2025-01-21T02:21:33,502278+00:00 NVRM: Xid (PCI:0000:38:00): 13, pid='<unknown>', name=<unknown>, Graphics Exception: ESR 0x546f30=0x124000e",
			want: Line{Kind: KindXid, PCI: "0000:38:00", Xid: 13, Message: "Graphics Exception: ESR 0x546f30=0x124000e"},
			ok:   true,
		},
		{
			name: "old driver without pid",
			line: "[ 12.3] NVRM: Xid (PCI:0000:3b:00): 79, GPU has fallen off the bus.",
			want: Line{Kind: KindXid, PCI: "0000:3b:00", Xid: 79, Message: "GPU has fallen off the bus."},
			ok:   true,
		},
		{
			name: "NVLink5 form keeps its fields in the message",
			line: "NVRM: Xid (PCI:0000:18:00): 145, pid=1, name=x, Link 05 (0x00000000 0x00000001 0x00000000 0x00000000 0x00000000 0x00000000)",
			want: Line{Kind: KindXid, PCI: "0000:18:00", Xid: 145, PID: 1, Process: "x",
				Message: "Link 05 (0x00000000 0x00000001 0x00000000 0x00000000 0x00000000 0x00000000)"},
			ok: true,
		},
		{
			name: "GPU mapping line",
			line: "[Sun Feb 23 16:24:18 2025] NVRM: GPU at PCI:0000:9b:00: GPU-509665ad-b600-ac93-3616-d754b23d636d",
			want: Line{Kind: KindGPUAttach, PCI: "0000:9b:00", UUID: "GPU-509665ad-b600-ac93-3616-d754b23d636d"},
			ok:   true,
		},
		// SXid lines as the NVSwitch driver prints them; the first two from a real
		// HGX node's log quoted in leptonai/gpud's SXid documentation, where GPU
		// 0000:91:00 fell off the bus and the switches reported it.
		{
			name: "fatal SXid with a link",
			line: "[6781753.400584] nvidia-nvswitch1: SXid (PCI:0000:06:00.0): 20034, Fatal, Link 48 LTSSM Fault Up",
			want: Line{Kind: KindSXid, PCI: "0000:06:00.0", NVSwitch: 1, SXid: 20034, Fatal: true, Link: 48, Message: "LTSSM Fault Up"},
			ok:   true,
		},
		{name: "SXid detail line", line: "[6781753.404848] nvidia-nvswitch2: SXid (PCI:0000:07:00.0): 20034, Severity 1 Engine instance 60 Sub-engine instance 00"},
		{name: "SXid data line", line: "[6781753.406566] nvidia-nvswitch0: SXid (PCI:0000:05:00.0): 20034, Data {0x10000000, 0x10000000, 0x00000000}"},
		{
			name: "non-fatal SXid, kmsg record",
			line: "4,2291,38889018130,-;nvidia-nvswitch0: SXid (PCI:0000:06:00.0): 20009, Non-fatal, Link 04 RX Short Error Rate",
			want: Line{Kind: KindSXid, PCI: "0000:06:00.0", NVSwitch: 0, SXid: 20009, Link: 4, Message: "RX Short Error Rate"},
			ok:   true,
		},
		{
			name: "SXid without a link",
			line: "nvidia-nvswitch0: SXid (PCI:0000:07:00.0): 10001, Non-fatal, PRI WRITE SYSB error, instance=3",
			want: Line{Kind: KindSXid, PCI: "0000:07:00.0", NVSwitch: 0, SXid: 10001, Link: -1, Message: "PRI WRITE SYSB error, instance=3"},
			ok:   true,
		},
		{name: "SXid cut short", line: "[38889.018130] nvidia-nvswitch1: SXid (PCI:0000:06:00.0): 20009, Non-fat"},
		{name: "SXid with a driver-form address", line: "nvidia-nvswitch1: SXid (PCI:0000:06:00): 20009, Fatal, x"},
		{name: "SXid of another driver", line: "nvidia-gpu0: SXid (PCI:0000:06:00.0): 20009, Fatal, x"},
		{name: "other NVRM line", line: "NVRM: GPU Board Serial Number: 1650124014249"},
		{name: "not NVRM", line: "nvidia-nvswitch2: open (major=510)"},
		{name: "xid zero", line: "NVRM: Xid (PCI:0000:9b:00): 0, pid=1, name=x, y"},
		{name: "xid not a number", line: "NVRM: Xid (PCI:0000:9b:00): abc, pid=1"},
		{name: "bad pci", line: "NVRM: Xid (PCI:00:9b:00): 13, pid=1, name=x, y"},
		{name: "truncated", line: "NVRM: Xid (PCI:0000:9b:00"},
		{name: "short uuid", line: "NVRM: GPU at PCI:0000:9b:00: GPU-1234"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := ParseLine(tt.line)
			if ok != tt.ok {
				t.Fatalf("ParseLine ok = %v, want %v", ok, tt.ok)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("ParseLine =\n %+v\nwant\n %+v", got, tt.want)
			}
		})
	}
}

func TestCanonicalPCI(t *testing.T) {
	l, _ := ParseLine("NVRM: GPU at PCI:0000:9B:00: GPU-509665ad-b600-ac93-3616-d754b23d636d")
	if got, want := l.CanonicalPCI(), "0000:9b:00.0"; got != want {
		t.Errorf("CanonicalPCI = %q, want %q", got, want)
	}
}

// TestRealLogs parses real kernel logs from leptonai/gpud (see testdata/README.md).
// The expected counts come from grep over the same files:
//
//	grep -h "NVRM: Xid" FILE | sed -E 's/.*\): ([0-9]+),.*/\1/' | sort -n | uniq -c
func TestRealLogs(t *testing.T) {
	tests := []struct {
		file     string
		xids     map[int]int
		attached map[string]string
	}{
		{
			file:     "components_accelerator_nvidia_error_xid__dmesg-with-xid-119.log",
			xids:     map[int]int{119: 5},
			attached: map[string]string{"0000:9b:00.0": "GPU-509665ad-b600-ac93-3616-d754b23d636d"},
		},
		{file: "components_memory__dmesg.decode.iso.log", xids: map[int]int{13: 16, 43: 1}},
		{file: "components_query_log_tail__dmesg.0.log", xids: map[int]int{48: 1, 63: 1, 94: 9}},
		{file: "pkg_dmesg__dmesg.decode.iso.log.0", xids: map[int]int{13: 629, 43: 7}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			f, err := os.Open(filepath.Join("testdata", tt.file))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			xids := map[int]int{}
			attached := map[string]string{}
			sc := bufio.NewScanner(f)
			sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
			for sc.Scan() {
				l, ok := ParseLine(sc.Text())
				switch {
				case !ok:
				case l.Kind == KindXid:
					xids[l.Xid]++
					if l.Message == "" {
						t.Errorf("Xid line without message: %q", sc.Text())
					}
				case l.Kind == KindGPUAttach:
					attached[l.CanonicalPCI()] = l.UUID
				}
			}
			if err := sc.Err(); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(xids, tt.xids) {
				t.Errorf("xids = %v, want %v", xids, tt.xids)
			}
			if len(tt.attached) > 0 && !reflect.DeepEqual(attached, tt.attached) {
				t.Errorf("attached = %v, want %v", attached, tt.attached)
			}
		})
	}
}

func FuzzParseLine(f *testing.F) {
	for _, s := range []string{
		"[Sun Feb 23 16:24:18 2025] NVRM: Xid (PCI:0000:9b:00): 119, pid=2024380, name=nvidia-smi, Timeout",
		"NVRM: Xid (PCI:0000:19:00): 63, pid='<unknown>', name=<unknown>, Row Remapper",
		"NVRM: GPU at PCI:0000:9b:00: GPU-509665ad-b600-ac93-3616-d754b23d636d",
		"NVRM: Xid (PCI:0000:3b:00): 79, GPU has fallen off the bus.",
		"NVRM: Xid (PCI:",
		"[6781753.400584] nvidia-nvswitch1: SXid (PCI:0000:06:00.0): 20034, Fatal, Link 48 LTSSM Fault Up",
		"nvidia-nvswitch0: SXid (PCI:0000:07:00.0): 10001, Non-fatal, PRI WRITE SYSB error, instance=3",
		"nvidia-nvswitch2: SXid (PCI:0000:07:00.0): 20034, Severity 1 Engine instance 60 Sub-engine instance 00",
		"nvidia-nvswitch9: SXid (PCI:",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		l, ok := ParseLine(s)
		if !ok {
			if l != (Line{}) {
				t.Fatalf("rejected line returned %+v", l)
			}
			return
		}
		switch l.Kind {
		case KindSXid:
			if p, err := telemetry.ParsePCIBusID(l.PCI); err != nil || p.String() != l.PCI {
				t.Fatalf("SXid with PCI %q: %v", l.PCI, err)
			}
			if l.SXid <= 0 || l.NVSwitch < 0 || l.Link < -1 || l.Xid != 0 {
				t.Fatalf("bad SXid line %+v", l)
			}
			return
		}
		if !validPCI(l.PCI) {
			t.Fatalf("accepted invalid PCI %q", l.PCI)
		}
		switch l.Kind {
		case KindXid:
			if l.Xid <= 0 || l.PID < 0 {
				t.Fatalf("bad xid line %+v", l)
			}
		case KindGPUAttach:
			if l.UUID == "" {
				t.Fatalf("attach without uuid: %+v", l)
			}
		default:
			t.Fatalf("ok with kind %v", l.Kind)
		}
	})
}

// BenchmarkParseLine measures one real Xid line; a flood of 800,000 Xid 95 lines
// (seen on one node) must parse in well under a second.
func BenchmarkParseLine(b *testing.B) {
	line := "[Sun Feb 23 16:24:18 2025] NVRM: Xid (PCI:0000:9b:00): 119, pid=2024380, name=nvidia-smi, Timeout after 6s of waiting for RPC response from GPU4 GSP! Expected function 103 (GSP_RM_ALLOC) (0x2081 0x4)."
	b.ReportAllocs()
	for b.Loop() {
		if _, ok := ParseLine(line); !ok {
			b.Fatal("not parsed")
		}
	}
}
