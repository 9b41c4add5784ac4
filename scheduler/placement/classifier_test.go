package placement

import (
	"context"
	"encoding/binary"
	"strings"
	"testing"

	"github.com/gpuwatch/gpuwatch/scheduler/framework"
	"github.com/gpuwatch/gpuwatch/scheduler/snapshot"
)

// preferNodes is a plugin registered only here, as a new plugin would be: one
// type, and one line in the engine's scorers. It prefers the nodes it names, a
// node attribute no built-in plugin reads, and says so in its node key.
type preferNodes struct{ names map[string]bool }

func (preferNodes) Name() string { return "prefer_nodes" }

func (p preferNodes) Score(_ context.Context, _ *framework.Request, c *framework.Candidate) (float64, framework.Status) {
	if p.names[c.Node.Name] {
		return 1, framework.Status{}
	}
	return 0, framework.Status{}
}

func (p preferNodes) AppendNodeKey(k framework.Key, n *snapshot.Node) framework.Key {
	return k.Bool(p.names[n.Name])
}

func (preferNodes) AppendRequestKey(k framework.Key, _ *framework.Request) framework.Key { return k }

// forgetfulPreferNodes reads the node's name but leaves it out of its key: the
// engine then merges nodes it tells apart.
type forgetfulPreferNodes struct{ preferNodes }

func (forgetfulPreferNodes) AppendNodeKey(k framework.Key, _ *snapshot.Node) framework.Key { return k }

// unclassifiedPreferNodes does not implement framework.Classifier.
type unclassifiedPreferNodes struct{ p preferNodes }

func (u unclassifiedPreferNodes) Name() string { return u.p.Name() }

func (u unclassifiedPreferNodes) Score(ctx context.Context, req *framework.Request, c *framework.Candidate) (float64, framework.Status) {
	return u.p.Score(ctx, req, c)
}

// TestPluginContributesClassKey: a plugin outside the built-in set keeps the
// engine grouping nodes into classes when it implements framework.Classifier, and
// its key keeps apart the nodes it tells apart, so the grouped engine decides as
// the exhaustive one does. Without the interface the engine evaluates every node;
// with a key that misses what the plugin reads, grouping goes wrong (which is what
// TestGroupedMatchesExhaustive would catch for the built-in plugins).
func TestPluginContributesClassKey(t *testing.T) {
	ctx := context.Background()
	// Sixteen identical idle nodes: without the preference they are one class.
	snap := fleet(t, small, nil)
	prefer := preferNodes{names: map[string]bool{"node-00005": true}}
	decide := func(t *testing.T, scorer framework.Scorer, exhaustive bool) (*Engine, string) {
		t.Helper()
		e, err := New(snap, Options{Exhaustive: exhaustive, Scorers: append(DefaultScorers(), WeightedScorer{scorer, 10})})
		if err != nil {
			t.Fatal(err)
		}
		d, err := e.DryRun(ctx, framework.Request{GPUs: 8})
		if err != nil || d.Outcome != framework.OutcomePlaced || len(d.Assignments) != 1 {
			t.Fatalf("%v %+v", err, d)
		}
		return e, d.Assignments[0].Node
	}
	e, got := decide(t, prefer, false)
	if !e.grouped {
		t.Fatal("a Classifier plugin turned grouping off")
	}
	if _, want := decide(t, prefer, true); got != want || got != "node-00005" {
		t.Errorf("grouped engine placed on %s, exhaustive on %s; want node-00005", got, want)
	}
	if e, got := decide(t, unclassifiedPreferNodes{prefer}, false); e.grouped || got != "node-00005" {
		t.Errorf("without Classifier: grouped %v, placed on %s", e.grouped, got)
	}
	if _, got := decide(t, forgetfulPreferNodes{prefer}, false); got == "node-00005" {
		t.Errorf("a key that misses the node's name still placed on %s: the test cannot tell", got)
	}
}

// rawKey appends its bytes as they are, with no length of its own.
type rawKey struct{ node, req string }

func (rawKey) Name() string { return "raw" }

func (r rawKey) AppendNodeKey(k framework.Key, _ *snapshot.Node) framework.Key {
	return append(k, r.node...)
}

func (r rawKey) AppendRequestKey(k framework.Key, _ *framework.Request) framework.Key {
	return append(k, r.req...)
}

// TestClassKeyPartsDoNotRunTogether: the engine frames each plugin's part of a
// key, so two plugins appending "ab" and "" never make the key of "a" and "b".
func TestClassKeyPartsDoNotRunTogether(t *testing.T) {
	n := fleet(t, small, nil).Node(0)
	key := func(a, b rawKey) (string, string) {
		e := &Engine{}
		e.cls.plugins = []framework.Classifier{a, b}
		return string(e.cls.appendStaticKey(nil, n)), string(e.appendRequestKey(nil, &framework.Request{GPUs: 1}, false))
	}
	long := strings.Repeat("x", 300) // a part longer than a one-byte length
	for _, tc := range [][2]string{{"ab", "a"}, {long, long[1:]}} {
		n1, r1 := key(rawKey{tc[0], tc[0]}, rawKey{"", ""})
		n2, r2 := key(rawKey{tc[1], tc[1]}, rawKey{tc[0][len(tc[1]):], tc[0][len(tc[1]):]})
		if n1 == n2 || r1 == r2 {
			t.Errorf("%d bytes: parts ran together: node keys equal %v, request keys equal %v", len(tc[0]), n1 == n2, r1 == r2)
		}
	}
	// A long part keeps its bytes after its varint length.
	b := []byte("pre")
	k, at := beginPart(b)
	b = endPart(append(k, long...), at)
	l, m := binary.Uvarint(b[3:])
	if string(b[:3]) != "pre" || l != 300 || string(b[3+m:]) != long {
		t.Errorf("framed part: length %d, bytes %q", l, b)
	}
}
