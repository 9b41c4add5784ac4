package topology

import (
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/gpuwatch/gpuwatch/scheduler/topology/ibnet"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// dataDir holds the real third-party fabric dumps (see ../shared/data/README.md).
const dataDir = "testdata/data/ibnetdiscover-topologies"

func open(t *testing.T, path string) *os.File {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("cannot open test data: %v", err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

func parseDump(t *testing.T, rel string) *ibnet.Fabric {
	t.Helper()
	f, err := ibnet.Parse(filepath.Base(rel), open(t, filepath.Join(dataDir, rel)))
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// x5 is the PSMN X5 production fabric with the site's GUID→host map.
func x5(t *testing.T) *Tree {
	t.Helper()
	gm, err := ReadGUIDMap("X5.map", open(t, filepath.Join(dataDir, "psmn-X5/X5.map")))
	if err != nil {
		t.Fatal(err)
	}
	tr, err := FromIBNetDiscover(parseDump(t, "psmn-X5/X5.topofile"), IBOptions{GUIDMap: gm})
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

// golden compares got with testdata/name, rewriting it under -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if string(got) != string(want) {
		t.Errorf("%s differs from the golden file (go test -update rewrites it):\n--- got\n%s\n--- want\n%s", name, got, want)
	}
}
