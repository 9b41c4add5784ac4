package hostlist

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

func TestCompress(t *testing.T) {
	tests := []struct {
		name string
		in   []string
		want string
	}{
		{"padded with a gap", []string{"gpu01", "gpu02", "gpu03", "gpu04", "gpu07"}, "gpu[01-04,07]"},
		{"unordered and duplicated", []string{"gpu07", "gpu02", "gpu01", "gpu02", "gpu03", "gpu04"}, "gpu[01-04,07]"},
		{"single host has no brackets", []string{"gpu7"}, "gpu7"},
		{"mixed prefixes sorted by prefix", []string{"b3", "a1", "a2", "login"}, "a[1-2],b3,login"},
		// Slurm: unpadded numbers of any length share a range.
		{"unpadded across a decade", []string{"node9", "node10", "node11"}, "node[9-11]"},
		// Slurm: node01 fixes width 2; node100 has no leading zero and fits width 2.
		{"padded then wider", []string{"node01", "node99", "node100"}, "node[01,99-100]"},
		// node001 (width 3) and node01 (width 2) cannot share a bracket.
		{"two paddings", []string{"node001", "node01", "node002"}, "node01,node[001-002]"},
		{"three-digit padding", []string{"node001", "node002", "node010"}, "node[001-002,010]"},
		{"digits inside the name", []string{"sl390lin1", "sl390lin2", "sl390lin5"}, "sl390lin[1-2,5]"},
		{"no trailing digits", []string{"H-78e7d1030024535c", "r-ufm"}, "H-78e7d1030024535c,r-ufm"},
		// Ten or more trailing digits are a GUID, not a number: left whole.
		{"guid names stay whole", []string{"S-0008f10500108098", "S-0008f10500108530"}, "S-0008f10500108098,S-0008f10500108530"},
		{"zero", []string{"n0", "n1"}, "n[0-1]"},
		{"empty", nil, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Compress(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("Compress(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

// TestCompressErrors: names holding host list syntax cannot be compressed.
func TestCompressErrors(t *testing.T) {
	for _, in := range [][]string{{"a,b"}, {"a[1]"}, {""}, {"a b"}} {
		if _, err := Compress(in); err == nil {
			t.Errorf("Compress(%q): no error", in)
		}
	}
}

func TestExpand(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"gpu[01-04,07]", []string{"gpu01", "gpu02", "gpu03", "gpu04", "gpu07"}},
		{"a[1-2],b3,login", []string{"a1", "a2", "b3", "login"}},
		{"node[9-11]", []string{"node9", "node10", "node11"}},
		{"node[098-101]", []string{"node098", "node099", "node100", "node101"}},
		{"r[1-2]-g[1-2]", []string{"r1-g1", "r1-g2", "r2-g1", "r2-g2"}},
		{"sl390lin[22,28,34,37]", []string{"sl390lin22", "sl390lin28", "sl390lin34", "sl390lin37"}},
	}
	for _, tc := range tests {
		got, err := Expand(tc.in)
		if err != nil {
			t.Fatalf("Expand(%q): %v", tc.in, err)
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("Expand(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	for _, bad := range []string{"", "a,,b", "n[", "n[]", "n[1-", "n[3-1]", "n[a]", "n[1]]", "n[[1]]", "n[0-99999999]", "a b"} {
		if got, err := Expand(bad); err == nil {
			t.Errorf("Expand(%q) = %q, want an error", bad, got)
		} else if !strings.Contains(err.Error(), fmt.Sprintf("%q", bad)) {
			t.Errorf("Expand(%q) error %q does not name the input", bad, err)
		}
	}
}

// TestCompressRoundTrip: for any set of names, Expand(Compress(names)) is the
// same set, and Compress is idempotent through Expand.
func TestCompressRoundTrip(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		prefixes := []string{"gpu", "node", "a-", "sl390lin", "x"}
		names := rapid.SliceOf(rapid.Custom(func(t *rapid.T) string {
			p := rapid.SampledFrom(prefixes).Draw(t, "prefix")
			n := rapid.IntRange(0, 1200).Draw(t, "n")
			w := rapid.IntRange(0, 4).Draw(t, "pad")
			if rapid.Bool().Draw(t, "bare") {
				return p
			}
			return fmt.Sprintf("%s%0*d", p, w, n)
		})).Draw(t, "names")
		expr, err := Compress(names)
		if err != nil {
			t.Fatal(err)
		}
		if len(names) == 0 {
			if expr != "" {
				t.Fatalf("Compress(nil) = %q", expr)
			}
			return
		}
		back, err := Expand(expr)
		if err != nil {
			t.Fatalf("Expand(Compress(%q) = %q): %v", names, expr, err)
		}
		want := slices.Clone(names)
		slices.Sort(want)
		want = slices.Compact(want)
		got := slices.Clone(back)
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Fatalf("Compress(%q) = %q expands to %q", names, expr, back)
		}
		if len(back) != len(got) || len(slices.Compact(got)) != len(back) {
			t.Fatalf("%q expands with duplicates: %q", expr, back)
		}
		again, _ := Compress(back)
		if again != expr {
			t.Fatalf("Compress not stable: %q then %q", expr, again)
		}
	})
}

func FuzzExpand(f *testing.F) {
	for _, s := range []string{"gpu[01-04,07]", "a[1-2],b3", "r[1-2]-g[1-2]", "n[", "n[3-1]", "x[0-5]y", "node[098-101]"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		names, err := Expand(s)
		if err != nil {
			return
		}
		expr, err := Compress(names)
		if err != nil {
			return // names may hold characters Compress refuses, such as spaces
		}
		back, err := Expand(expr)
		if err != nil {
			t.Fatalf("Expand(%q) → Compress %q does not expand: %v", s, expr, err)
		}
		a, b := slices.Clone(names), slices.Clone(back)
		slices.Sort(a)
		slices.Sort(b)
		if !slices.Equal(slices.Compact(a), b) {
			t.Fatalf("%q → %q → %q: sets differ", s, expr, back)
		}
	})
}
