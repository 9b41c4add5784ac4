package ibnet

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const data = "../testdata/data"

func parseFile(t *testing.T, rel string) *Fabric {
	t.Helper()
	fh, err := os.Open(filepath.Join(data, rel))
	if err != nil {
		t.Fatalf("cannot open test data: %v", err)
	}
	defer fh.Close()
	f, err := Parse(filepath.Base(rel), fh)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// TestParseRealDumps reads every real dump in ../shared/data. The expected counts
// are the files' own: grep -c '^Switch', grep -c '^Ca' and grep -c '^\[' (port
// lines) for the topology files; distinct SW and CA GUIDs and grep -c ' - [A-Z]'
// (connected port lines) for the -p port reports.
func TestParseRealDumps(t *testing.T) {
	tests := []struct {
		file            string
		switches, cas   int
		links, warnings int
	}{
		// 11 Switch blocks, 89 Ca blocks, 318 port lines.
		{"ibnetdiscover-topologies/psmn-X5/X5.topofile", 11, 89, 318, 0},
		// "Non-Chassis Nodes" between blocks is a warning, not an error.
		{"ibnetdiscover-topologies/jabl-ibtopotool/1.topo", 2, 4, 14, 1},
		{"ibnetdiscover-topologies/jabl-ibtopotool/2.topo", 1, 2, 4, 0},
		// Line 1 is ibnetdiscover's own error message captured with the dump.
		{"ibnetdiscover-topologies/jabl-ibtopotool/3.topo", 2, 6, 20, 1},
		{"ibnetdiscover-topologies/jabl-ibtopotool/4.topo", 1, 1, 2, 0},
		// -p: 3 CA ports, switches 7cfe…e5b0, 7cfe…7320, 506b…2740, 08c0…d20e.
		{"infiniband-exporter-fixtures/ibnetdiscover/test.out", 4, 3, 7, 0},
		{"infiniband-exporter-fixtures/ibnetdiscover/test2.out", 5, 2, 3, 0},
		{"infiniband-exporter-fixtures/ibnetdiscover/test3.out", 1, 0, 0, 0},
	}
	for _, tc := range tests {
		t.Run(filepath.Base(tc.file), func(t *testing.T) {
			f := parseFile(t, tc.file)
			links := 0
			for _, n := range f.Nodes {
				links += len(n.Links)
			}
			if got := f.Count(Switch); got != tc.switches {
				t.Errorf("switches: %d, want %d", got, tc.switches)
			}
			if got := f.Count(CA); got != tc.cas {
				t.Errorf("CAs: %d, want %d", got, tc.cas)
			}
			if links != tc.links {
				t.Errorf("links: %d, want %d", links, tc.links)
			}
			if len(f.Warnings) != tc.warnings {
				t.Errorf("warnings %q, want %d", f.Warnings, tc.warnings)
			}
		})
	}
}

func TestParseX5Details(t *testing.T) {
	f := parseFile(t, "ibnetdiscover-topologies/psmn-X5/X5.topofile")
	sw, ok := f.Node("S-0008f10500200b50")
	if !ok {
		t.Fatal("switch S-0008f10500200b50 missing")
	}
	if sw.GUID != 0x8f10500200b50 || sw.Ports != 36 || sw.Desc != "Voltaire 4036 - 36 QDR ports switch" || sw.Line != 10 {
		t.Errorf("switch: %+v", *sw)
	}
	l := sw.Links[3] // [4]	"H-003048c749cd0000"[1](3048c749cd0001) … lid 72 4xDDR
	if l.Port != 4 || l.RemoteID != "H-003048c749cd0000" || l.RemotePort != 1 || l.RemotePortGUID != 0x3048c749cd0001 ||
		l.RemoteDesc != "MT25408 ConnectX Mellanox Technologies" || l.Rate != "4xDDR" || l.Line != 14 {
		t.Errorf("link: %+v", l)
	}
	ca, _ := f.Node("H-0002c90300080d28")
	if ca.GUID != 0x2c90300080d28 || len(ca.Links) != 1 || ca.Links[0].PortGUID != 0x2c90300080d29 || ca.Links[0].RemoteID != "S-0008f10500108bba" || ca.Links[0].RemotePort != 28 {
		t.Errorf("ca: %+v %+v", *ca, ca.Links)
	}
}

func TestParsePortReport(t *testing.T) {
	f := parseFile(t, "infiniband-exporter-fixtures/ibnetdiscover/test2.out")
	n, ok := f.Node("H-b83fd20300da1138")
	if !ok || n.Desc != "worker20 mlx5_3" || len(n.Links) != 1 || n.Links[0].RemoteID != "S-946dae0300630bf6" || n.Links[0].RemotePort != 79 {
		t.Fatalf("CA worker20: %+v", n)
	}
	if sw, _ := f.Node("S-946dae0300618c83"); sw.Desc != "5FB0406-spine-IB02" {
		t.Errorf("description not trimmed: %q", sw.Desc)
	}
}

func TestParseErrors(t *testing.T) {
	sw := "switchguid=0x1(1)\nSwitch\t4 \"S-0000000000000001\"\t# \"sw\" base port 0 lid 1 lmc 0\n"
	ca := "\ncaguid=0x2\nCa\t1 \"H-0000000000000002\"\t# \"host1 HCA-1\"\n[1](3) \"S-0000000000000001\"[1]\t# lid 2 lmc 0 \"sw\" lid 1 4xQDR\n"
	tests := []struct{ name, in, want string }{
		{"port line outside a block", "[1] \"S-1\"[2]\n", "d:1: port line outside a node block"},
		{"garbage inside a block", sw + "hello\n", `d:3: unrecognised line in the block of "S-0000000000000001"`},
		{"undeclared remote", sw + "[1]\t\"H-0000000000000009\"[1](a)\t# \"x\" lid 2 4xQDR\n", `d:3: link from "S-0000000000000001" port 1 to "H-0000000000000009", which the file never declares`},
		{"port beyond the port count", sw + "[9]\t\"H-0000000000000002\"[1](3)\t# \"x\" lid 2 4xQDR\n" + ca, "d:3: port 9 of \"S-0000000000000001\", which has 4 ports"},
		{"declared twice", sw + "\n" + sw, `d:5: node "S-0000000000000001" declared twice (first at line 2)`},
		{"no blank line between blocks", sw + "switchguid=0x3(3)\n", `d:3: switchguid= inside the block`},
		{"nothing", "# only a comment\n", "d: no switch or CA found"},
		{"bad -p line", "SW 1 1 0x1 4x QDR 'a'\nnonsense\n", "d:2: not an ibnetdiscover -p port line"},
		{"bad -p peer", "SW 1 1 0x1 4x QDR - CA 2 1 0x2 'a' - 'b'\n", "d:1: malformed peer"},
		{"huge port number", "switchguid=0x1(1)\nSwitch\t99999999 \"S-1\"\t# \"sw\"\n", "d:2: port count"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("d", strings.NewReader(tc.in))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error containing %q", err, tc.want)
			}
		})
	}
	f, err := Parse("d", strings.NewReader(sw+"[1]\t\"H-0000000000000002\"[1](3)\t# \"host1 HCA-1\" lid 2 4xQDR\n"+ca))
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := f.Node("H-0000000000000002"); n.GUID != 2 || n.Desc != "host1 HCA-1" {
		t.Errorf("CA %+v", n)
	}
}

func FuzzParse(f *testing.F) {
	for _, rel := range []string{"ibnetdiscover-topologies/jabl-ibtopotool/1.topo", "ibnetdiscover-topologies/jabl-ibtopotool/3.topo", "infiniband-exporter-fixtures/ibnetdiscover/test.out"} {
		b, err := os.ReadFile(filepath.Join(data, rel))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(b))
	}
	f.Add("switchguid=0x1(1)\nSwitch\t4 \"S-1\"\t# \"sw\"\n[1]\t\"S-1\"[2]\n")
	f.Fuzz(func(t *testing.T, s string) {
		fab, err := Parse("fuzz", strings.NewReader(s))
		if err != nil {
			if !strings.HasPrefix(err.Error(), "fuzz") && !strings.HasPrefix(err.Error(), "read fuzz") {
				t.Fatalf("error does not name the input: %v", err)
			}
			return
		}
		for _, n := range fab.Nodes {
			if got, ok := fab.Node(n.ID); !ok || got != n {
				t.Fatalf("node %q not indexed", n.ID)
			}
			for _, l := range n.Links {
				if _, ok := fab.Node(l.RemoteID); !ok {
					t.Fatalf("link to undeclared %q", l.RemoteID)
				}
			}
		}
	})
}
