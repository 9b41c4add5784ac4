package openb

import (
	"strings"
	"testing"
)

func TestParsePodsErrors(t *testing.T) {
	const hdr = "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec\n"
	tests := []struct {
		name, in, want string
	}{
		{"empty file", "", "pods.csv: empty file"},
		{"missing column", "name,cpu_milli,memory_mib,num_gpu\n", `pods.csv:1: missing column "gpu_milli"`},
		// Columns are byte offsets on the line: "x" follows the 8 bytes "p0,1000,".
		{"not an integer", hdr + "p0,1000,x,1,1000,\n", `pods.csv:2:9: column memory_mib: not an integer: "x"`},
		{"milli out of range", hdr + "p0,1000,10,1,1500,\n", "pods.csv:2:14: column gpu_milli: 1500 out of range [0, 1000]"},
		{"negative cpu", hdr + "p0,-1,10,1,500,\n", "pods.csv:2:4: column cpu_milli: -1 out of range"},
		{"share across GPUs", hdr + "p0,1,10,2,500,\n", "pods.csv:2:11: column gpu_milli: pod p0: a 2-GPU pod must take whole GPUs"},
		{"GPU pod without milli", hdr + "p0,1,10,1,0,\n", "pods.csv:2:11: column gpu_milli: pod p0: milli GPU per GPU must be in [1, 1000]"},
		{"duplicate", hdr + "p0,1,10,0,0,\np0,1,10,0,0,\n", `pods.csv:3:1: column name: duplicate pod "p0" (first on line 2)`},
		{"short row", hdr + "p0,1,10\n", "pods.csv: record on line 2: wrong number of fields"},
		{"no pods", hdr, "pods.csv: no pods"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParsePods(strings.NewReader(tt.in), "pods.csv")
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want it to contain %q", err, tt.want)
			}
		})
	}
}

func TestParsePods(t *testing.T) {
	// The multigpu lists have the first five columns only; gpu_spec alternatives
	// are normalized and ignored for CPU-only pods, as the simulator does.
	in := "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos\n" +
		"a,1000,2048,1,460,|T4||P100|,LS\n" +
		"b,8000,4096,0,0,G2,BE\n" +
		"c,4.0,1,8,1000,,LS\n"
	pods, err := ParsePods(strings.NewReader(in), "x.csv")
	if err != nil {
		t.Fatal(err)
	}
	if got := pods[0].GPUSpec; got != "T4|P100" {
		t.Errorf("spec %q, want T4|P100", got)
	}
	if pods[1].GPUSpec != "" || pods[1].MilliGPU != 0 {
		t.Errorf("CPU pod kept GPU fields: %+v", pods[1])
	}
	if pods[2].MilliCPU != 4 || pods[2].TotalMilliGPU() != 8000 {
		t.Errorf("pod c: %+v", pods[2])
	}
}

func TestParseNodesErrors(t *testing.T) {
	const hdr = "sn,cpu_milli,memory_mib,gpu,model\n"
	tests := []struct{ name, in, want string }{
		{"GPUs without model", hdr + "n0,1000,10,2,\n", "nodes.csv:2:14: column model: node n0 has 2 GPUs but no model"},
		{"bad gpu count", hdr + "n0,1000,10,two,T4\n", `nodes.csv:2:12: column gpu: not an integer: "two"`},
		{"duplicate", hdr + "n0,1,1,0,\nn0,1,1,0,\n", `nodes.csv:3:1: column sn: duplicate node "n0"`},
		{"missing column", "sn,cpu_milli\n", `nodes.csv:1: missing column "memory_mib"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseNodes(strings.NewReader(tt.in), "nodes.csv")
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want it to contain %q", err, tt.want)
			}
		})
	}
}

func TestParseSeeds(t *testing.T) {
	got, err := ParseSeeds("42-44, 50")
	if err != nil || len(got) != 4 || got[0] != 42 || got[2] != 44 || got[3] != 50 {
		t.Fatalf("ParseSeeds: %v, %v", got, err)
	}
	for _, bad := range []string{"", "x", "51-42", "1-999999"} {
		if _, err := ParseSeeds(bad); err == nil {
			t.Errorf("ParseSeeds(%q) accepted", bad)
		}
	}
}

// FuzzParsePods: any input either parses into valid pods or fails with an error
// that names the file; it never panics.
func FuzzParsePods(f *testing.F) {
	f.Add("name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec\np0,12000,16384,1,1000,\np1,6000,12288,1,460,T4|P100\n")
	f.Add("name,cpu_milli,memory_mib,num_gpu,gpu_milli\np0,1,1,8,1000\n")
	f.Add("name,cpu_milli\n\"a\nb\",1\n")
	f.Fuzz(func(t *testing.T, in string) {
		pods, err := ParsePods(strings.NewReader(in), "f.csv")
		if err != nil {
			if !strings.HasPrefix(err.Error(), "f.csv") {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		for i := range pods {
			if err := pods[i].Validate(); err != nil {
				t.Fatalf("parsed an invalid pod: %v", err)
			}
		}
	})
}

// FuzzParseNodes: as FuzzParsePods, for node lists.
func FuzzParseNodes(f *testing.F) {
	f.Add("sn,cpu_milli,memory_mib,gpu,model\nn0,64000,262144,2,P100\nn1,96000,393216,8,G2\n")
	f.Add("sn,cpu_milli,memory_mib,gpu,model\nn0,1,1,0,\n")
	f.Fuzz(func(t *testing.T, in string) {
		nodes, err := ParseNodes(strings.NewReader(in), "f.csv")
		if err != nil {
			if !strings.HasPrefix(err.Error(), "f.csv") {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		for i := range nodes {
			if err := nodes[i].Validate(); err != nil {
				t.Fatalf("parsed an invalid node: %v", err)
			}
		}
	})
}
