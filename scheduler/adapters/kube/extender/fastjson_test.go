package extender

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	extenderv1 "k8s.io/kube-scheduler/extender/v1"

	"github.com/gpuwatch/gpuwatch/scheduler/placement"
)

// checkAgainstEncodingJSON decodes body both ways and, when the fast decoder
// takes it, demands encoding/json's ExtenderArgs; then it encodes answers for
// the names with both encoders and demands the same bytes. seed picks each
// node's judgement.
func checkAgainstEncodingJSON(t *testing.T, body []byte, seed uint64) {
	t.Helper()
	var want extenderv1.ExtenderArgs
	wantErr := json.Unmarshal(body, &want)
	got, ok := decodeArgsFast(body, make([]string, 3, 5))
	if ok {
		if wantErr != nil {
			t.Fatalf("fast decoder took %q, which encoding/json refuses: %v", body, wantErr)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("fast decoder on %q:\n got %#v\nwant %#v", body, got, want)
		}
	}
	if wantErr != nil || want.Nodes != nil {
		return
	}
	v := randomVerdict(nodeNames(&want), seed)
	var enc bytes.Buffer
	if err := json.NewEncoder(&enc).Encode(filterResult(v, &want)); err != nil {
		t.Fatal(err)
	}
	if fast := appendFilterResult(nil, v); !bytes.Equal(fast, enc.Bytes()) {
		t.Fatalf("filter answer for %q:\n got %s\nwant %s", body, fast, enc.Bytes())
	}
	enc.Reset()
	if err := json.NewEncoder(&enc).Encode(priorities(v)); err != nil {
		t.Fatal(err)
	}
	if fast := appendPriorities(nil, v); !bytes.Equal(fast, enc.Bytes()) {
		t.Fatalf("prioritize answer for %q:\n got %s\nwant %s", body, fast, enc.Bytes())
	}
}

// randomVerdict judges names at random: feasible with a score, unknown to the
// snapshot, short of capacity or rejected otherwise, with awkward reasons.
func randomVerdict(names []string, seed uint64) *verdict {
	r := rand.New(rand.NewPCG(seed, seed>>7))
	v := &verdict{names: names, release: func() {}, result: "ok"}
	if r.IntN(8) == 0 {
		return v // failed open: every node passes
	}
	reasons := []string{"2 of 8 GPUs free", `needs "h100" <80GB> & more`, "xid 79\n\tgone", "ünïcode \u2028", "bad \xff byte", ""}
	for _, n := range names {
		s := placement.NodeScore{Node: n}
		switch r.IntN(4) {
		case 0:
			s.Feasible, s.Score = true, r.Float64()*1.2-0.1
		case 1:
			s.Plugin, s.Reason = "snapshot", "unknown node"
		case 2:
			s.Plugin, s.Reason = "capacity", reasons[r.IntN(len(reasons))]
		default:
			s.Plugin, s.Reason = []string{"health", "model", "x<y"}[r.IntN(3)], reasons[r.IntN(len(reasons))]
		}
		v.scores = append(v.scores, s)
	}
	return v
}

func seedBodies(t testing.TB) [][]byte {
	t.Helper()
	p := pod(2, map[string]string{AnnotationModel: "h100"})
	real, err := json.Marshal(extenderv1.ExtenderArgs{Pod: p, NodeNames: names("node-00000", "node-00001", "node-00000")})
	if err != nil {
		t.Fatal(err)
	}
	nodes, err := json.Marshal(extenderv1.ExtenderArgs{Pod: p, Nodes: &v1.NodeList{Items: []v1.Node{{}}}})
	if err != nil {
		t.Fatal(err)
	}
	return [][]byte{real, nodes,
		[]byte(`{}`), []byte(` null `), []byte(`{"pod":null,"nodenames":[]}`),
		[]byte(`{"NODENAMES":["a","b<c>","d\u00e9", "\u00e9x"] , "Nodes" : null, "extra":{"x":[1,"]"]}}`),
		[]byte(`{"NodeNames":["a"],"NodeNames":["b"]}`), []byte(`{"NodeNames":["a\"b"]}`),
		[]byte("{\"NodeNames\":[\"bad\xffutf8\", \"é\"]}"), []byte(`{"NodeNames":["a",]}`), []byte(`{"Pod":7}`),
		[]byte(`{"Pod":{"metadata":{"name":"x"}},"x":tru}`), []byte(`{"NodeNames":["a"]} x`), []byte(`{"NodeNames":null}`),
		[]byte(`{"Nodeſ":null}`), []byte(`{"NodeNames":["z","a","z","m"],"Pod":{"spec":{}}}`)}
}

// TestFastJSONAgrees: the fast decoder and encoders agree with encoding/json on
// hand-picked bodies and on random node-name lists (escapes, HTML characters,
// non-ASCII, invalid UTF-8, repeats), and the fast decoder takes the body
// kube-scheduler sends.
func TestFastJSONAgrees(t *testing.T) {
	bodies := seedBodies(t)
	if _, ok := decodeArgsFast(bodies[0], nil); !ok {
		t.Fatalf("the fast decoder refused kube-scheduler's body %s", bodies[0])
	}
	for i, b := range bodies {
		checkAgainstEncodingJSON(t, b, uint64(i))
	}
	r := rand.New(rand.NewPCG(1, 2))
	alphabet := []string{"a", "z", "-", ".", "0", "<", "&", "\"", "\\", "é", "\u2028", "\xff", "\n", " ", ","}
	for i := range 500 {
		ns := make([]string, r.IntN(20))
		for j := range ns {
			var sb strings.Builder
			for range r.IntN(6) {
				sb.WriteString(alphabet[r.IntN(len(alphabet))])
			}
			ns[j] = sb.String()
		}
		body, err := json.Marshal(extenderv1.ExtenderArgs{Pod: pod(int64(r.IntN(3)), nil), NodeNames: &ns})
		if err != nil {
			t.Fatal(err)
		}
		checkAgainstEncodingJSON(t, body, uint64(i))
	}
}

// FuzzFastJSON: on any body, the fast decoder either declines or decodes what
// encoding/json decodes, and the fast encoders write encoding/json's bytes.
func FuzzFastJSON(f *testing.F) {
	for i, b := range seedBodies(f) {
		f.Add(b, uint64(i))
	}
	f.Fuzz(func(t *testing.T, body []byte, seed uint64) {
		checkAgainstEncodingJSON(t, body, seed)
	})
}
