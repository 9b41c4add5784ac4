package fairshare

import (
	"context"
	"strings"
	"testing"
	"time"

	fs "github.com/gpuwatch/gpuwatch/scheduler/fairshare"
)

// handCSV is TestIdleVersusBusyByHand's workload as a CSV trace.
const handCSV = `# the idle/busy hand case
# cluster: nodes=1 gpus_per_node=2
# shares: idle=1 busy=1
# walltime_factor: 1
# window: 0s 2h
arrival,duration,gpus,account,user,profile,name
0,1h,1,idle,idle-u,0.1,I1
0,1h,1,busy,busy-u,0.9,B1
0,1h,1,idle,idle-u,0.1,I2
0,1h,1,busy,busy-u,0.9,B2
0,1h,1,idle,idle-u,0.1,I3
0,1h,1,busy,busy-u,0.9,B3
0,1h,1,idle,idle-u,0.1,I4
0,3600,1,busy,busy-u,0.9,B4
`

const handJSON = `{
  "cluster": {"nodes": 1, "gpus_per_node": 2},
  "shares": {"idle": 1, "busy": 1},
  "walltime_factor": 1,
  "window": {"start": "0s", "end": "2h"},
  "jobs": [
    {"name": "I1", "arrival": 0, "duration": "1h", "gpus": 1, "account": "idle", "user": "idle-u", "profile": 0.1},
    {"name": "B1", "arrival": 0, "duration": "1h", "gpus": 1, "account": "busy", "user": "busy-u", "profile": 0.9},
    {"name": "I2", "arrival": 0, "duration": "1h", "gpus": 1, "account": "idle", "user": "idle-u", "profile": 0.1},
    {"name": "B2", "arrival": 0, "duration": "1h", "gpus": 1, "account": "busy", "user": "busy-u", "profile": {"values": [0.9, 0.9], "step": "57s"}},
    {"name": "I3", "arrival": 0, "duration": "1h", "gpus": 1, "account": "idle", "user": "idle-u", "profile": 0.1},
    {"name": "B3", "arrival": 0, "duration": "1h", "gpus": 1, "account": "busy", "user": "busy-u", "profile": 0.9},
    {"name": "I4", "arrival": 0, "duration": "1h", "gpus": 1, "account": "idle", "user": "idle-u", "profile": 0.1},
    {"name": "B4", "arrival": "0s", "duration": 3600, "gpus": 1, "account": "busy", "user": "busy-u", "profile": 0.9}
  ]
}`

// TestTraceFormatsReplayTheHandCase: both formats give the hand case's
// workload, and its replay under measured charging gives the hand-derived
// starts (see TestIdleVersusBusyByHand).
func TestTraceFormatsReplayTheHandCase(t *testing.T) {
	for name, data := range map[string]string{"hand.csv": handCSV, "hand.json": handJSON} {
		t.Run(name, func(t *testing.T) {
			w, err := ParseTrace(name, []byte(data))
			if err != nil {
				t.Fatal(err)
			}
			if w.Cluster != (Cluster{1, 2}) || len(w.Jobs) != 8 || w.Shares["idle"] != 1 || w.WindowEnd != 2*h {
				t.Fatalf("parsed %+v", w)
			}
			for _, j := range w.Jobs {
				if j.Walltime != j.Duration {
					t.Errorf("%s: walltime %v, want the duration (factor 1)", j.Name, j.Walltime)
				}
			}
			tr, err := Replay(context.Background(), w, Config{Policy: policy(fs.ChargeMeasured), Interval: h, HalfLife: 1000 * h})
			if err != nil {
				t.Fatal(err)
			}
			want := []time.Duration{0, 0, h, 2 * h, h, 3 * h, 2 * h, 3 * h} // I1 B1 I2 B2 I3 B3 I4 B4
			for i, o := range tr.Jobs {
				if o.Start != want[i] {
					t.Errorf("%s starts at %v, want %v", w.Jobs[i].Name, o.Start, want[i])
				}
			}
		})
	}
}

func TestTraceDefaults(t *testing.T) {
	w, err := ParseTrace("t.csv", []byte("arrival,duration,gpus,account,user,profile,step\n10,90m,2,a,u,0.5 0.25;1,1m\n"))
	if err != nil {
		t.Fatal(err)
	}
	j := w.Jobs[0]
	// Walltime defaults to duration × 2; an account without a shares
	// directive gets 1 share; no cluster directive leaves it unset.
	if j.Arrival != 10*time.Second || j.Duration != 90*time.Minute || j.Walltime != 3*h || w.Shares["a"] != 1 || w.Cluster != (Cluster{}) {
		t.Errorf("job %+v shares %v cluster %v", j, w.Shares, w.Cluster)
	}
	// Profile 0.5, 0.25, 1 every minute: the first 3 minutes average 7/12.
	if got := j.Profile.Activity(0, 0, 3*time.Minute); !near(got, 1.75/3) {
		t.Errorf("activity over the first period %v, want %v", got, 1.75/3)
	}
	// From minute 2 to minute 4 wraps: 1 then 0.5.
	if got := j.Profile.Activity(0, 2*time.Minute, 4*time.Minute); !near(got, 0.75) {
		t.Errorf("activity over minutes 2–4 %v, want 0.75", got)
	}
}

func TestTraceErrorsNameTheLine(t *testing.T) {
	const hdr = "arrival,duration,gpus,account,user,profile\n"
	cases := []struct{ name, data, want string }{
		{"no header", "", "t.csv: no header row"},
		{"unknown column", "arrival,duration,gpus,account,user,profile,color\n", "t.csv:1: header column \"color\""},
		{"missing column", "arrival,duration,gpus,account,user\n", "t.csv:1: header has no \"profile\" column"},
		{"bad arrival", hdr + "soon,1h,1,a,u,1\n", "t.csv:2: arrival: time \"soon\""},
		{"zero duration", hdr + "0,0,1,a,u,1\n", "t.csv:2: duration \"0\": a job must run"},
		{"bad gpus", hdr + "0,1h,0,a,u,1\n", "t.csv:2: gpus 0"},
		{"activity out of range", "# c\n" + hdr + "0,1h,1,a,u,1.5\n", "t.csv:3: profile value \"1.5\""},
		{"list without step", hdr + "0,1h,1,a,u,0.1 0.2\n", "t.csv:2: profile has 2 values but no step"},
		{"walltime short", "arrival,duration,gpus,account,user,profile,walltime\n0,1h,1,a,u,1,30m\n", "t.csv:2: walltime 30m0s is shorter"},
		{"account with space", hdr + "0,1h,1,a b,u,1\n", "t.csv:2: account \"a b\""},
		{"field count", hdr + "0,1h,1,a,u\n", "t.csv:2: 5 fields, the header has 6"},
		{"account without shares", "# shares: a=1\n" + hdr + "0,1h,1,b,u,1\n", "t.csv:3: account \"b\" is not in the shares directive"},
		{"bad cluster", "# cluster: nodes=0 gpus_per_node=8\n" + hdr, "t.csv:1: cluster directive"},
		{"too big for cluster", "# cluster: nodes=1 gpus_per_node=2\n" + hdr + "0,1h,4,a,u,1\n", "t.csv:3: job asks for 4 GPUs"},
		{"directive after header", hdr + "# shares: a=1\n", "t.csv:2: directive \"shares\" after the header"},
		{"bad factor", "# walltime_factor: 0.5\n" + hdr, "t.csv:1: walltime_factor"},
		{"json syntax", "{\n\"jobs\": [\n{\"arrival\": 0,,}\n]}", "t.csv:3:"},
		{"json unknown key", "{\n\"color\": 1}", "t.csv:2: unknown key \"color\""},
		{"json unknown job field", "{\"jobs\": [\n{\"arrival\": 0, \"duration\": 1, \"gpus\": 1, \"account\": \"a\", \"user\": \"u\", \"profile\": 1},\n{\"arival\": 0}]}", "t.csv:3: job: json: unknown field \"arival\""},
		{"json missing profile", "{\"jobs\": [\n\n{\"arrival\": 0, \"duration\": 1, \"gpus\": 1, \"account\": \"a\", \"user\": \"u\"}]}", "t.csv:3: job: arrival, duration and profile are required"},
		{"json bad profile", "{\"jobs\": [{\"arrival\": 0, \"duration\": 1, \"gpus\": 1, \"account\": \"a\", \"user\": \"u\", \"profile\": {\"values\": [2]}}]}", "t.csv:1: job: profile value 2"},
		{"json trailing data", "{\"jobs\": [{\"arrival\": 0, \"duration\": 1, \"gpus\": 1, \"account\": \"a\", \"user\": \"u\", \"profile\": 1}]}\n{}", "data after the trace object"},
		{"json no jobs", "{}", "t.csv: no jobs"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseTrace("t.csv", []byte(tc.data))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

// FuzzParseTrace: any input either fails with an error naming the trace or
// parses into a workload that validates once given a cluster, and replays.
func FuzzParseTrace(f *testing.F) {
	f.Add([]byte(handCSV))
	f.Add([]byte(handJSON))
	f.Add([]byte("arrival,duration,gpus,account,user,profile,step\n10,90m,2,a,u,0.5 0.25;1,1m\n"))
	f.Add([]byte("# cluster: nodes=2 gpus_per_node=4\narrival,duration,gpus,account,user,profile,walltime\n0,1,8,a,u,1,2\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		w, err := ParseTrace("fuzz", data)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "fuzz") {
				t.Fatalf("error does not name the trace: %v", err)
			}
			return
		}
		if w.Cluster == (Cluster{}) {
			big := 1
			for _, j := range w.Jobs {
				big = max(big, j.GPUs)
			}
			w.Cluster = Cluster{Nodes: 1, GPUsPerNode: big}
		}
		if err := w.Validate(); err != nil {
			t.Fatalf("parsed workload does not validate: %v", err)
		}
		if len(w.Jobs) > 50 {
			return
		}
		for _, j := range w.Jobs {
			if j.Arrival > 1000*h || j.Duration > 1000*h {
				return // replays hours of ticks; not what the fuzzer is for
			}
		}
		if _, err := Replay(context.Background(), w, Config{Policy: policy(fs.ChargeMeasured), Interval: h}); err != nil {
			t.Fatalf("replay of a parsed trace failed: %v", err)
		}
	})
}
