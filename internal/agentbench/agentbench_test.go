package main

import (
	"github.com/gpuwatch/gpuwatch/internal/procstat"

	"os"
	"strings"
	"testing"
)

func TestProfShare(t *testing.T) {
	traces := `File: agent.test
Type: cpu
-----------+-------------------------------------------------------
      30ms   syscall.Syscall
             github.com/gpuwatch/gpuwatch/collector/simhw/simib.writeAtomic
             github.com/gpuwatch/gpuwatch/collector/simhw.(*Fleet).Advance
-----------+-------------------------------------------------------
      10ms   github.com/gpuwatch/gpuwatch/collector/simhw.(*device).GetTemperature
             github.com/gpuwatch/gpuwatch/collector/nvml.(*Source).CollectHealth
             github.com/gpuwatch/gpuwatch/collector.(*Runner).collect.func1
-----------+-------------------------------------------------------
      40ms   runtime.mallocgc
             github.com/gpuwatch/gpuwatch/collector.(*Exporter).Render
             github.com/gpuwatch/gpuwatch/collector/agent.New.func1
             github.com/gpuwatch/gpuwatch/collector.(*Runner).Cycle
-----------+-------------------------------------------------------
      20ms   os.Open
             github.com/gpuwatch/gpuwatch/collector/infiniband.(*Source).Collect
             github.com/gpuwatch/gpuwatch/collector.(*Runner).collect.func1
-----------+-------------------------------------------------------
`
	var out strings.Builder
	if err := runProfShare(strings.NewReader(traces), &out); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	for _, want := range []string{
		"outside: simulated hardware advancing                           30ms    30.0%",
		"cycle: exporter (OnPublish)                                     40ms    40.0%     57.1%",
		"cycle: source infiniband                                        20ms    20.0%     28.6%",
		"cycle: simulated NVML library (simhw, not agent code)           10ms    10.0%     14.3%",
		"total in cycle                                                  70ms    70.0%",
		"agent alone (all but simulated hardware and profiler)           60ms    60.0%",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("missing %q in\n%s", want, got)
		}
	}
	if err := runProfShare(strings.NewReader("nothing"), &out); err == nil {
		t.Error("no samples: no error")
	}
}

func TestProcReaders(t *testing.T) {
	rss, hwm, err := procstat.Mem("self")
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	if rss == 0 || hwm < rss {
		t.Errorf("VmRSS %d VmHWM %d", rss, hwm)
	}
	if _, err := procstat.CPU(os.Getpid()); err != nil {
		t.Error(err)
	}
	if _, err := procstat.CPU(-1); err == nil {
		t.Error("no error for a missing process")
	}
}

// TestHourShort runs the hour mode for a few cycles so it keeps working.
func TestHourShort(t *testing.T) {
	if err := runHour([]string{"-cycles", "20", "-report", "10"}); err != nil {
		t.Fatal(err)
	}
}
