package xid

import (
	"bufio"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/collector/simhw/simkmsg"
	"github.com/gpuwatch/gpuwatch/telemetry"
)

// BenchmarkTail measures the tail path, read + parse + map + dedup + count, over a
// flood of 100,000 Xid 95 lines (29 distinct) in the simulator's /dev/kmsg format
// and in dmesg's text format; it reports lines per second.
func BenchmarkTail(b *testing.B) {
	const n = 100_000
	kmsgPath, boot := floodLog(b, n, 29)
	// The same flood as dmesg prints it.
	l := simkmsg.New(boot, simkmsg.WithCapacity(n+16))
	l.GPUAttached(boot, "0000:19:00.0", "GPU-00000000-0000-0000-0000-000000000000", "1")
	l.Flood(boot.Add(time.Minute), "0000:19:00.0", 95, n, time.Millisecond, 0, "", "Uncontained: FBHUB. RST: Yes, D-RST: No")
	dmesgPath := filepath.Join(b.TempDir(), "dmesg.log")
	if err := l.AppendTo(dmesgPath, simkmsg.FormatDmesg); err != nil {
		b.Fatal(err)
	}
	for _, tt := range []struct{ name, path string }{{"kmsg", kmsgPath}, {"dmesg", dmesgPath}} {
		b.Run(tt.name, func(b *testing.B) {
			b.ReportAllocs()
			lines := 0
			for b.Loop() {
				s := New(Options{Inventory: testInventory(b), BootTime: func() (time.Time, error) { return boot, nil }})
				f, err := os.Open(tt.path)
				if err != nil {
					b.Fatal(err)
				}
				t := &tailer{s: s, r: bufio.NewReaderSize(f, 64<<10)}
				if err := t.drain(); err != nil {
					b.Fatal(err)
				}
				f.Close()
				if st := s.Stats(); st.Accepted+st.Suppressed < n {
					b.Fatalf("stats %+v", st)
				}
				lines += int(s.Stats().Lines)
			}
			b.ReportMetric(float64(lines)/b.Elapsed().Seconds(), "lines/s")
		})
	}
}

// BenchmarkCollect measures one Collect of a node with 8 GPUs and a few Xids each.
func BenchmarkCollect(b *testing.B) {
	s := New(Options{Inventory: testInventory(b)})
	now := time.Now()
	for _, line := range []string{
		"NVRM: Xid (PCI:0000:19:00): 13, a", "NVRM: Xid (PCI:0000:19:00): 31, b",
		"NVRM: Xid (PCI:0000:38:00): 13, a", "NVRM: Xid (PCI:0000:9b:00): 79, c",
		"NVRM: Xid (PCI:0000:9b:00): 154, d", "NVRM: Xid (PCI:0000:9b:00): 154, d",
	} {
		l, _ := ParseLine(line)
		s.observeLog(l, now, now, true)
	}
	ctx := context.Background()
	n := 0
	b.ReportAllocs()
	for b.Loop() {
		if err := s.CollectHealth(ctx, func(telemetry.Sample) { n++ }); err != nil {
			b.Fatal(err)
		}
	}
}
