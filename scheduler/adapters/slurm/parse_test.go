package slurm

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func readReal(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "real", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestParseGRES(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     []GRES
	}{
		{"none", "(null)", nil},
		{"N/A", "N/A", nil},
		{"configured", "gpu:h100:8", []GRES{{Name: "gpu", Type: "h100", Count: 8}}},
		{"untyped with sockets", "gpu:8(S:0-1)", []GRES{{Name: "gpu", Count: 8, Sockets: "0-1"}}},
		{"used", "gpu:h100:3(IDX:0-2)", []GRES{{Name: "gpu", Type: "h100", Count: 3, Indices: []int{0, 1, 2}}}},
		{"unused", "gpu:h100:0(IDX:N/A)", []GRES{{Name: "gpu", Type: "h100", Count: 0}}},
		// An index list holds commas; they do not split entries.
		{"gappy", "gpu:h100:4(IDX:0,2-3,7)", []GRES{{Name: "gpu", Type: "h100", Count: 4, Indices: []int{0, 2, 3, 7}}}},
		{"two types", "gpu:a100:2(IDX:0-1),gpu:h100:0(IDX:N/A)", []GRES{
			{Name: "gpu", Type: "a100", Count: 2, Indices: []int{0, 1}}, {Name: "gpu", Type: "h100", Count: 0}}},
		{"mps suffix", "gpu:2,mps:1K", []GRES{{Name: "gpu", Count: 2}, {Name: "mps", Count: 1024}}},
	} {
		got, err := ParseGRES(tc.in)
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: ParseGRES(%q) = %+v, %v; want %+v", tc.name, tc.in, got, err, tc.want)
		}
	}
	for _, bad := range []string{"gpu:h100:x", "gpu:a:b:c", ":8", "gpu:8(IDX:3-1)", "gpu:8(IDX:0", "gpu:8(IDX)", "gpu:-1", "gpu:99999999G"} {
		if _, err := ParseGRES(bad); err == nil || !strings.Contains(err.Error(), bad) {
			t.Errorf("ParseGRES(%q): error %v should name the input", bad, err)
		}
	}
}

func TestExpandHostlist(t *testing.T) {
	for in, want := range map[string][]string{
		"gpu02":                {"gpu02"},
		"gpu[03-04]":           {"gpu03", "gpu04"},
		"gpu[01-02,07],login1": {"gpu01", "gpu02", "gpu07", "login1"},
		"n[8-11]":              {"n8", "n9", "n10", "n11"},
		"rack1-n[001-002]-ib":  {"rack1-n001-ib", "rack1-n002-ib"},
	} {
		got, err := ExpandHostlist(in)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("ExpandHostlist(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"gpu[1-", "gpu[2-1]", "gpu[a]", "gpu]1[", "a[1][2]", "n[0-99999999]"} {
		if _, err := ExpandHostlist(bad); err == nil {
			t.Errorf("ExpandHostlist(%q): no error", bad)
		}
	}
}

// TestParseSinfoJSONReal reads sinfo --json as Slurm 22.05.8 printed it with
// jobs running, three kinds of drain, then a reboot issued and a node down.
func TestParseSinfoJSONReal(t *testing.T) {
	nodes, err := ParseSinfoJSON(readReal(t, "sinfo-busy.json"))
	if err != nil {
		t.Fatal(err)
	}
	type view struct {
		State                                               string
		Flags                                               []string
		Draining, DrainComplete, RebootPending, Down, Owned bool
		Reason                                              string
		GPUs, Used                                          int
		Indices                                             []int
	}
	seq := func(n int) []int {
		var s []int
		for i := range n {
			s = append(s, i)
		}
		return s
	}
	want := map[string]view{
		"gpu01": {"IDLE", []string{"DRAIN"}, false, true, false, false, true, "gpuwatch: xid79 gpu=GPU-1b8b action=RESTART_BM", 8, 0, nil},
		"gpu02": {"MIXED", []string{"DRAIN"}, true, false, false, false, false, "ops: replacing PSU", 8, 3, seq(3)},
		"gpu03": {"MIXED", []string{"DRAIN", "REBOOT_REQUESTED"}, true, false, true, false, true, "gpuwatch: xid154 action=REBOOT", 8, 8, seq(8)},
		"gpu04": {"MIXED", nil, false, false, false, false, false, "", 8, 8, seq(8)},
	}
	check := func(file string, nodes []Node, want map[string]view) {
		t.Helper()
		if len(nodes) != len(want) {
			t.Fatalf("%s: %d nodes, want %d", file, len(nodes), len(want))
		}
		for _, n := range nodes {
			got := view{n.State, n.Flags, n.Draining(), n.DrainComplete(), n.RebootPending(), n.Down(), Owned(n.Reason),
				n.Reason, n.GPUs(), n.GPUsUsed(), n.UsedGPUIndices()}
			if !reflect.DeepEqual(got, want[n.Name]) {
				t.Errorf("%s %s:\n got %+v\nwant %+v", file, n.Name, got, want[n.Name])
			}
			if (n.Reason != "") != (n.ReasonUser == "root" && !n.ReasonTime.IsZero()) {
				t.Errorf("%s %s: reason %q set by %q at %s", file, n.Name, n.Reason, n.ReasonUser, n.ReasonTime)
			}
			if n.CPUs != 16 || n.BootTime.IsZero() || n.SlurmdStartTime.Before(n.BootTime) || !reflect.DeepEqual(n.Partitions, []string{"gpu"}) {
				t.Errorf("%s %s: %+v", file, n.Name, n)
			}
		}
	}
	check("sinfo-busy.json", nodes, want)

	nodes, err = ParseSinfoJSON(readReal(t, "sinfo-reboot.json"))
	if err != nil {
		t.Fatal(err)
	}
	want["gpu03"] = view{"DOWN", []string{"DRAIN", "REBOOT_ISSUED"}, false, true, true, true, true, "gpuwatch: xid154 action=REBOOT : reboot issued", 8, 0, nil}
	want["gpu04"] = view{"DOWN", nil, false, false, false, true, false, "ops: cable", 8, 0, nil}
	check("sinfo-reboot.json", nodes, want)
}

// TestShowNodeAgreesWithSinfo: scontrol show node (the existing ParseShowNode)
// and sinfo --json, captured at the same moment, give each node the same state,
// flags and reason.
func TestShowNodeAgreesWithSinfo(t *testing.T) {
	for _, pair := range [][2]string{
		{"scontrol-show-node-busy.txt", "sinfo-busy.json"},
		{"scontrol-show-node-reboot.txt", "sinfo-reboot.json"},
	} {
		nodes, err := ParseSinfoJSON(readReal(t, pair[1]))
		if err != nil {
			t.Fatal(err)
		}
		records := splitShowNode(string(readReal(t, pair[0])))
		if len(records) != len(nodes) {
			t.Fatalf("%s: %d records, %s: %d nodes", pair[0], len(records), pair[1], len(nodes))
		}
		for i, rec := range records {
			st, err := ParseShowNode(rec)
			if err != nil {
				t.Fatalf("%s record %d: %v", pair[0], i, err)
			}
			if !reflect.DeepEqual(st, nodes[i].NodeState) {
				t.Errorf("%s: %+v\n%s: %+v", pair[0], st, pair[1], nodes[i].NodeState)
			}
		}
	}
}

// splitShowNode splits scontrol show node output into one record per node.
func splitShowNode(out string) []string {
	var recs []string
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "NodeName=") {
			recs = append(recs, "")
		}
		if len(recs) > 0 {
			recs[len(recs)-1] += line + "\n"
		}
	}
	return recs
}

func TestParseSqueueJSONReal(t *testing.T) {
	jobs, err := ParseSqueueJSON(readReal(t, "squeue-busy.json"))
	if err != nil {
		t.Fatal(err)
	}
	type view struct {
		State, Account, User string
		Priority             int64
		PerNode, GPUs        int
		Nodes                map[string][]int
	}
	all := []int{0, 1, 2, 3, 4, 5, 6, 7}
	want := map[uint32]view{
		1: {"RUNNING", "team-a", "root", 1, 3, 3, map[string][]int{"gpu02": {0, 1, 2}}},
		2: {"RUNNING", "team-b", "root", 1, 8, 16, map[string][]int{"gpu03": all, "gpu04": all}},
		3: {"PENDING", "team-c", "root", 500, 8, 0, map[string][]int{}},
		// A negative SiteFactor takes the priority to Slurm's floor of 1.
		4: {"PENDING", "team-c", "root", 1, 1, 0, map[string][]int{}},
	}
	if len(jobs) != len(want) {
		t.Fatalf("%d jobs, want %d", len(jobs), len(want))
	}
	for _, j := range jobs {
		got := view{j.State, j.Account, j.User, j.Priority, j.GPUsPerNode, j.GPUs(), map[string][]int{}}
		for _, n := range j.Nodes {
			got.Nodes[n.Name] = n.GPUIndices()
		}
		if !reflect.DeepEqual(got, want[j.ID]) {
			t.Errorf("job %d:\n got %+v\nwant %+v", j.ID, got, want[j.ID])
		}
		if j.Name != "wrap" || j.Partition != "gpu" || j.SubmitTime.IsZero() || (j.State == "RUNNING") == j.StartTime.IsZero() || j.ArrayTaskID != -1 {
			t.Errorf("job %d: %+v", j.ID, j)
		}
	}
}

func TestParseSprioReal(t *testing.T) {
	got, err := ParseSprio(string(readReal(t, "sprio-busy.txt")))
	if err != nil || !reflect.DeepEqual(got, map[uint32]int64{3: 500, 4: -20}) {
		t.Errorf("ParseSprio = %v, %v", got, err)
	}
	for _, bad := range []string{"3", "x 5", "3 5 6", "0 5", "3 five"} {
		if _, err := ParseSprio(bad); err == nil {
			t.Errorf("ParseSprio(%q): no error", bad)
		}
	}
	if got, err := ParseSprio("12_3 40\n13 7\n"); err != nil || !reflect.DeepEqual(got, map[uint32]int64{13: 7}) {
		t.Errorf("array element: %v %v", got, err)
	}
}

// TestControllerDownJSON: with slurmctld down, sinfo and squeue --json exit 0;
// the parsers turn the errors inside into a *JSONError.
func TestControllerDownJSON(t *testing.T) {
	_, err := ParseSinfoJSON(readReal(t, "sinfo-ctld-down.json"))
	var je *JSONError
	if !errors.As(err, &je) || je.Command != "sinfo --json" || !strings.Contains(err.Error(), "Unspecified error") {
		t.Errorf("sinfo: %v", err)
	}
	_, err = ParseSqueueJSON(readReal(t, "squeue-ctld-down.json"))
	if !errors.As(err, &je) || !strings.Contains(err.Error(), "slurm_load_jobs: Failed while looking for jobs: Unspecified error") {
		t.Errorf("squeue: %v", err)
	}
}

// TestUnreachableMessages: what the commands printed with the controller down
// reads as unreachable, except the two that say something else (the job
// update, and ping, which has its own check); what they print for an unknown
// node or job does not.
func TestUnreachableMessages(t *testing.T) {
	for _, block := range strings.Split(string(readReal(t, "ctld-down.txt")), "\n\n") {
		cmd, msg, _ := strings.Cut(strings.TrimSpace(block), "\n")
		if cmd == "" {
			continue
		}
		want := !strings.Contains(cmd, "sitefactor") && !strings.Contains(cmd, "ping")
		if saysUnreachable(msg) != want {
			t.Errorf("%s: %q: unreachable=%v, want %v", cmd, msg, !want, want)
		}
	}
	for _, block := range strings.Split(string(readReal(t, "rejected.txt")), "\n\n") {
		if _, msg, _ := strings.Cut(strings.TrimSpace(block), "\n"); saysUnreachable(msg) {
			t.Errorf("%q reads as unreachable", msg)
		}
	}
	down := "Slurmctld(primary) at vm is DOWN\n*****************************************\n** RESTORE SLURMCTLD DAEMON TO SERVICE **\n"
	if !pingSaysDown(down) || pingSaysDown("Slurmctld(primary) at vm is UP\n") ||
		pingSaysDown("Slurmctld(primary) at a is DOWN\nSlurmctld(backup) at b is UP\n") || pingSaysDown("") {
		t.Error("pingSaysDown")
	}
}

// TestNewerSlurmJSONShapes: Slurm 23.02+ prints states as lists and numbers as
// {"set","infinite","number"}; a hand-written document in that shape (fields
// as documented for openapi v0.0.39, not captured) parses the same way.
func TestNewerSlurmJSONShapes(t *testing.T) {
	doc := `{"meta":{},"errors":[],"nodes":[{"name":"gpu01","state":["IDLE","DRAIN","REBOOT_REQUESTED"],
	  "reason":"gpuwatch: x","reason_set_by_user":"root","reason_changed_at":{"set":true,"infinite":false,"number":1700000000},
	  "gres":"gpu:h100:8(S:0-1)","gres_used":"gpu:h100:2(IDX:0-1)","cpus":16,"alloc_cpus":{"set":true,"number":2},
	  "boot_time":{"set":false,"number":0},"partitions":["gpu"]}]}`
	nodes, err := ParseSinfoJSON([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	n := nodes[0]
	if n.State != "IDLE" || !reflect.DeepEqual(n.Flags, []string{"DRAIN", "REBOOT_REQUESTED"}) || n.AllocCPUs != 2 ||
		!n.ReasonTime.Equal(time.Unix(1700000000, 0)) || !n.BootTime.IsZero() || n.GPUsUsed() != 2 {
		t.Errorf("%+v", n)
	}
	jobs, err := ParseSqueueJSON([]byte(`{"errors":[],"jobs":[{"job_id":7,"job_state":["RUNNING"],"priority":{"set":true,"number":42},
	  "array_task_id":{"set":false,"number":0},"nodes":"gpu[01-02]","tres_per_node":"gres/gpu:4","gres_detail":["gpu:4(IDX:0-3)","gpu:4(IDX:4-7)"]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	j := jobs[0]
	if j.State != "RUNNING" || j.Priority != 42 || j.ArrayTaskID != -1 || j.GPUsPerNode != 4 || len(j.Nodes) != 2 ||
		j.Nodes[1].Name != "gpu02" || !reflect.DeepEqual(j.Nodes[1].GPUIndices(), []int{4, 5, 6, 7}) {
		t.Errorf("%+v", j)
	}
}

func TestParseJSONErrorsNameTheProblem(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`not json`, "sinfo --json: cannot parse output"},
		{`{"nodes":[{"name":"a","state":"idle"}]} {}`, "data after the JSON document"},
		{`{"errors":[]}`, `no "nodes" list`},
		{`{"nodes":[{"state":"idle"}]}`, "nodes[0] has no name"},
		{`{"nodes":[{"name":"a"}]}`, "node a has no state"},
		{`{"nodes":[{"name":"a","state":"idle","gres":"gpu:x"}]}`, `node a: gres "gpu:x"`},
		{`{"nodes":[{"name":"a","state":7}]}`, "neither a string nor a list"},
	} {
		if _, err := ParseSinfoJSON([]byte(tc.in)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error saying %q", tc.in, err, tc.want)
		}
	}
	for _, tc := range []struct{ in, want string }{
		{`{"jobs":[{"job_state":"RUNNING"}]}`, "jobs[0]: job_id is missing"},
		{`{"jobs":[{"job_id":3}]}`, "job 3 has no job_state"},
		{`{"jobs":[{"job_id":3,"job_state":"RUNNING","nodes":"a[1-2]","gres_detail":["gpu:1"]}]}`, "job 3: 1 gres_detail entries for 2 nodes"},
		{`{"jobs":[{"job_id":3,"job_state":"RUNNING","nodes":"a[1-","gres_detail":[]}]}`, "job 3: nodes: host list"},
		{`{"jobs":[{"job_id":3,"job_state":"RUNNING","tres_per_node":"gres:gpu:many"}]}`, "job 3: tres_per_node"},
		{`{"jobs":[{"job_id":"x","job_state":"RUNNING"}]}`, "squeue --json: cannot parse output"},
	} {
		if _, err := ParseSqueueJSON([]byte(tc.in)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error saying %q", tc.in, err, tc.want)
		}
	}
}

func FuzzParseGRES(f *testing.F) {
	for _, s := range []string{"gpu:h100:8", "gpu:h100:3(IDX:0-2)", "gpu:a100:2(IDX:0,2),gpu:h100:0(IDX:N/A)", "gpu:8(S:0-1)", "mps:1K"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		gs, err := ParseGRES(s)
		if err != nil {
			return
		}
		for _, g := range gs {
			if g.Name == "" || g.Count < 0 || g.Count > maxGRESCount {
				t.Fatalf("%q: %+v", s, g)
			}
			for i, x := range g.Indices {
				if x < 0 || (i > 0 && x <= g.Indices[i-1]) {
					t.Fatalf("%q: indices %v not sorted distinct", s, g.Indices)
				}
			}
		}
	})
}

func FuzzExpandHostlist(f *testing.F) {
	for _, s := range []string{"gpu[01-04]", "a,b[1,3-5]", "n[8-11]-ib"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		hosts, err := ExpandHostlist(s)
		if err == nil && len(hosts) > maxHosts {
			t.Fatalf("%q: %d hosts", s, len(hosts))
		}
	})
}

func FuzzParseSinfoJSON(f *testing.F) {
	for _, name := range []string{"sinfo-busy.json", "sinfo-reboot.json", "sinfo-ctld-down.json"} {
		f.Add(readReal(f, name))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		nodes, err := ParseSinfoJSON(b)
		if err != nil {
			return
		}
		for _, n := range nodes {
			if n.Name == "" || n.State == "" || n.GPUsUsed() < 0 {
				t.Fatalf("accepted %+v", n)
			}
		}
	})
}

func FuzzParseSqueueJSON(f *testing.F) {
	for _, name := range []string{"squeue-busy.json", "squeue-ctld-down.json"} {
		f.Add(readReal(f, name))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		jobs, err := ParseSqueueJSON(b)
		if err != nil {
			return
		}
		for _, j := range jobs {
			if j.ID == 0 || j.State == "" {
				t.Fatalf("accepted %+v", j)
			}
			for _, n := range j.Nodes {
				if n.Name == "" {
					t.Fatalf("job %d: node without a name", j.ID)
				}
			}
		}
	})
}

func FuzzParseSprio(f *testing.F) {
	f.Add(string(readReal(f, "sprio-busy.txt")))
	f.Fuzz(func(t *testing.T, s string) {
		m, err := ParseSprio(s)
		if err == nil && m[0] != 0 {
			t.Fatal("job 0 accepted")
		}
	})
}
