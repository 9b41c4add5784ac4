package fairshare

import (
	"fmt"
	"math"
	"strings"
	"testing"
)

func near(a, b, tol float64) bool { return math.Abs(a-b) <= tol }

// TestClassicSlurmDocExample reproduces the worked example of Slurm's
// classic_fair_share.html ("Example", Figure 3) with its published numbers.
//
// Tree: A(40){B(30){user1:1}, C(10){user2:1, user3:1}}, D(60){E(25){user4:1},
// F(35){user5:1}}. The page gives actual usage as fractions of the machine:
// user1 0.2, user2 0.25, user4 0.25; they sum to 0.7, while Slurm normalizes by
// root's usage (usage_norm = usage_raw / root usage_raw). The remaining 0.3 is
// given to a root-level user with 0 shares, which leaves every level's shares
// (A 40 + D 60 = 100) and every normalized usage exactly as on the page.
func TestClassicSlurmDocExample(t *testing.T) {
	tree, err := NewTree(TreeSpec{
		Users: []UserSpec{{Name: "idle", Shares: 0}},
		Accounts: []AccountSpec{
			{Name: "A", Shares: 40, Accounts: []AccountSpec{
				{Name: "B", Shares: 30, Users: []UserSpec{{Name: "user1", Shares: 1}}},
				{Name: "C", Shares: 10, Users: []UserSpec{{Name: "user2", Shares: 1}, {Name: "user3", Shares: 1}}},
			}},
			{Name: "D", Shares: 60, Accounts: []AccountSpec{
				{Name: "E", Shares: 25, Users: []UserSpec{{Name: "user4", Shares: 1}}},
				{Name: "F", Shares: 35, Users: []UserSpec{{Name: "user5", Shares: 1}}},
			}},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	usage := map[Assoc]float64{
		{Account: "B", User: "user1"}:   0.2,
		{Account: "C", User: "user2"}:   0.25,
		{Account: "E", User: "user4"}:   0.25,
		{Account: "root", User: "idle"}: 0.3,
	}
	f := ComputeFactors(tree, usage, FactorOptions{})
	tests := []struct {
		assoc      Assoc
		normShares float64
		effUsage   float64
		factor     float64 // users only; NaN: not checked
	}{
		// First tier: UE = actual usage. A = 0.2 + 0.25 = 0.45, D = 0.25.
		{Assoc{Account: "A"}, 0.4, 0.45, math.NaN()},
		{Assoc{Account: "D"}, 0.6, 0.25, math.NaN()},
		// B: 0.2 + (0.45 - 0.2) * 30/40 = 0.3875; C: 0.25 + (0.45 - 0.25) * 10/40 = 0.3
		{Assoc{Account: "B"}, 0.3, 0.3875, math.NaN()},
		{Assoc{Account: "C"}, 0.1, 0.3, math.NaN()},
		// E: 0.25 + (0.25 - 0.25) * 25/60 = 0.25; F: 0 + (0.25 - 0) * 35/60 = 0.1458333
		{Assoc{Account: "E"}, 0.25, 0.25, math.NaN()},
		{Assoc{Account: "F"}, 0.35, 0.25 * 35 / 60, math.NaN()},
		// Users, and the page's factors F = 2^(-UE/S):
		// user1: 0.2 + (0.3875 - 0.2) * 1/1 = 0.3875; 2^(-.3875/.3) = 0.408479
		{Assoc{Account: "B", User: "user1"}, 0.3, 0.3875, 0.408479},
		// user2: 0.25 + (0.3 - 0.25) * 1/2 = 0.275; 2^(-.275/.05) = 0.022097
		{Assoc{Account: "C", User: "user2"}, 0.05, 0.275, 0.022097},
		// user3: 0 + (0.3 - 0) * 1/2 = 0.15; 2^(-.15/.05) = 0.125
		{Assoc{Account: "C", User: "user3"}, 0.05, 0.15, 0.125},
		// user4: 0.25 + 0 = 0.25; 2^(-.25/.25) = 0.5
		{Assoc{Account: "E", User: "user4"}, 0.25, 0.25, 0.5},
		// user5: 0 + 0.1458 * 1/1; 2^(-.1458/.35) = 0.749154
		{Assoc{Account: "F", User: "user5"}, 0.35, 0.25 * 35 / 60, 0.749154},
	}
	for _, tc := range tests {
		r, ok := f.Get(tc.assoc)
		if !ok {
			t.Fatalf("%v: no row", tc.assoc)
		}
		if !near(r.SharesNorm, tc.normShares, 1e-12) {
			t.Errorf("%v: normalized shares %v, want %v", tc.assoc, r.SharesNorm, tc.normShares)
		}
		if !near(r.UsageEffective, tc.effUsage, 1e-12) {
			t.Errorf("%v: effective usage %v, want %v", tc.assoc, r.UsageEffective, tc.effUsage)
		}
		if !math.IsNaN(tc.factor) && !near(r.ClassicFactor, tc.factor, 5e-7) {
			t.Errorf("%v: classic factor %.6f, want %.6f (published)", tc.assoc, r.ClassicFactor, tc.factor)
		}
	}
}

// slurmTest24_4 is the association tree of Slurm's Fair Tree regression test
// (testsuite/expect/test24.4.prog.c), as the flat rows sacctmgr would list, with
// each user's raw usage. It covers shares and usage at several depths, 0 shares
// (aC), Fairshare=parent users and accounts (aD, aDA), ties of users and
// accounts with no usage (aE, aF, root's u1) and a user tied with a sibling
// account (aG).
var slurmTest24_4 = struct {
	rows  []Association
	usage map[Assoc]float64
}{
	rows: []Association{
		{Account: "aA", Parent: "root", Shares: 40},
		{Account: "aAA", Parent: "aA", Shares: 30},
		{Account: "aAA", User: "uAA1", Shares: 1},
		{Account: "aAB", Parent: "aA", Shares: 10},
		{Account: "aAB", User: "uAB1", Shares: 1},
		{Account: "aAB", User: "uAB2", Shares: 1},
		{Account: "aB", Parent: "root", Shares: 60},
		{Account: "aBA", Parent: "aB", Shares: 25},
		{Account: "aBA", User: "uBA1", Shares: 1},
		{Account: "aBB", Parent: "aB", Shares: 35},
		{Account: "aBB", User: "uBB1", Shares: 1},
		{Account: "aC", Parent: "root", Shares: 0},
		{Account: "aC", User: "uC1", Shares: 0},
		{Account: "aD", Parent: "root", Shares: 50},
		{Account: "aDA", Parent: "aD", Shares: SharesParent},
		{Account: "aDA", User: "uDA1", Shares: SharesParent},
		{Account: "aDA", User: "uDA2", Shares: 30},
		{Account: "aDA", User: "uDA3", Shares: 50},
		{Account: "aD", User: "uD1", Shares: SharesParent},
		{Account: "aD", User: "uD2", Shares: 40},
		{Account: "aD", User: "uD3", Shares: 50},
		{Account: "aE", Parent: "root", Shares: 10},
		{Account: "aE", User: "aE1", Shares: 10},
		{Account: "aE", User: "aE2", Shares: 10},
		{Account: "root", User: "u1", Shares: 10},
		{Account: "aF", Parent: "root", Shares: 20},
		{Account: "aF", User: "uF1", Shares: 10},
		{Account: "aF", User: "uF2", Shares: 20},
		{Account: "aG", Parent: "root", Shares: 8},
		{Account: "aG", User: "uG1", Shares: 10},
		{Account: "aGA", Parent: "aG", Shares: 10},
		{Account: "aGA", User: "uGA1", Shares: 20},
		{Account: "aGA", User: "uGA2", Shares: 20},
		{Account: "root", User: "u2", Shares: 10},
	},
	usage: map[Assoc]float64{
		{Account: "aAA", User: "uAA1"}: 20,
		{Account: "aAB", User: "uAB1"}: 25,
		{Account: "aBA", User: "uBA1"}: 25,
		{Account: "aC", User: "uC1"}:   30,
		{Account: "aDA", User: "uDA1"}: 10,
		{Account: "aDA", User: "uDA2"}: 10,
		{Account: "aDA", User: "uDA3"}: 25,
		{Account: "aD", User: "uD1"}:   20,
		{Account: "aD", User: "uD2"}:   20,
		{Account: "aD", User: "uD3"}:   25,
		{Account: "aG", User: "uG1"}:   10,
		{Account: "aGA", User: "uGA1"}: 4,
		{Account: "aGA", User: "uGA2"}: 6,
		{Account: "root", User: "u2"}:  10,
	},
}

// test24_4Expected are the lines Slurm's test24.4 expects from sshare -l -P
// (Account|User|RawShares|NormShares|RawUsage|NormUsage|EffectvUsage|FairShare|
// LevelFS|GrpTRESMins|TRESRunMins), copied from testsuite/expect/test24.4.
// Root's own line is left out: sshare prints root specially. There are 21 users,
// so FairShare values are k/21. Worked by hand for the top level (root usage
// 240, level shares 208): LF(aB) = (60/208)/(25/240) = 2.769231; u1, aE, aF have
// no usage (LF inf) and tie: u1 (a user sorts first) gets rank 21 and aE's and
// aF's users inherit it through the tie (1.0 for all six); then aB's users
// (uBB1 16/21, uBA1 15/21), u2 14/21, aA's, aD's, aG's and aC's last (LF 0: no
// shares, uC1 1/21).
var test24_4Expected = []string{
	"root|u1|10|0.048077|0|0.000000|0.000000|1.000000|inf||cpu=0|",
	"root|u2|10|0.048077|10|0.041667|0.041667|0.666667|1.153846||cpu=0|",
	"aA||40|0.192308|45|0.187500|0.187500||1.025641||cpu=0|",
	"aAA||30|0.750000|20|0.083333|0.444444||1.687500||cpu=0|",
	"aAA|uAA1|1|1.000000|20|0.083333|1.000000|0.619048|1.000000||cpu=0|",
	"aAB||10|0.250000|25|0.104167|0.555556||0.450000||cpu=0|",
	"aAB|uAB1|1|0.500000|25|0.104167|1.000000|0.523810|0.500000||cpu=0|",
	"aAB|uAB2|1|0.500000|0|0.000000|0.000000|0.571429|inf||cpu=0|",
	"aB||60|0.288462|25|0.104167|0.104167||2.769231||cpu=0|",
	"aBA||25|0.416667|25|0.104167|1.000000||0.416667||cpu=0|",
	"aBA|uBA1|1|1.000000|25|0.104167|1.000000|0.714286|1.000000||cpu=0|",
	"aBB||35|0.583333|0|0.000000|0.000000||inf||cpu=0|",
	"aBB|uBB1|1|1.000000|0|0.000000|0.000000|0.761905|inf||cpu=0|",
	"aC||0|0.000000|30|0.125000|0.125000||0.000000||cpu=0|",
	"aC|uC1|0|0.000000|30|0.125000|1.000000|0.047619|0.000000||cpu=0|",
	"aD||50|0.240385|110|0.458333|0.458333||0.524476||cpu=0|",
	"aD|uD1|parent|0.240385|20|0.083333|0.181818|0.476190|||cpu=0|",
	"aD|uD2|40|0.235294|20|0.083333|0.181818|0.238095|1.294118||cpu=0|",
	"aD|uD3|50|0.294118|25|0.104167|0.227273|0.333333|1.294118||cpu=0|",
	"aDA||parent|0.240385|45|0.187500|0.409091||||cpu=0|",
	"aDA|uDA1|parent|0.240385|10|0.041667|0.090909|0.476190|||cpu=0|",
	"aDA|uDA2|30|0.176471|10|0.041667|0.090909|0.380952|1.941176||cpu=0|",
	"aDA|uDA3|50|0.294118|25|0.104167|0.227273|0.333333|1.294118||cpu=0|",
	"aE||10|0.048077|0|0.000000|0.000000||inf||cpu=0|",
	"aE|aE1|10|0.500000|0|0.000000|0.000000|1.000000|inf||cpu=0|",
	"aE|aE2|10|0.500000|0|0.000000|0.000000|1.000000|inf||cpu=0|",
	"aF||20|0.096154|0|0.000000|0.000000||inf||cpu=0|",
	"aF|uF1|10|0.333333|0|0.000000|0.000000|1.000000|inf||cpu=0|",
	"aF|uF2|20|0.666667|0|0.000000|0.000000|1.000000|inf||cpu=0|",
	"aG||8|0.038462|20|0.083333|0.083333||0.461538||cpu=0|",
	"aG|uG1|10|0.500000|10|0.041667|0.500000|0.190476|1.000000||cpu=0|",
	"aGA||10|0.500000|10|0.041667|0.500000||1.000000||cpu=0|",
	"aGA|uGA1|20|0.500000|4|0.016667|0.400000|0.190476|1.250000||cpu=0|",
	"aGA|uGA2|20|0.500000|6|0.025000|0.600000|0.095238|0.833333||cpu=0|",
}

// sshareLine prints a row the way sshare -l -P does in Fair Tree mode, where
// NormShares is the level share and EffectvUsage the usage within the parent.
func sshareLine(r Row) string {
	fs := ""
	if r.User != "" {
		fs = fmt.Sprintf("%.6f", r.FairTreeFactor)
	}
	lf := ""
	switch {
	case r.Shares.IsParent():
	case math.IsInf(r.LevelFS, 1):
		lf = "inf"
	default:
		lf = fmt.Sprintf("%.6f", r.LevelFS)
	}
	return fmt.Sprintf("%s|%s|%s|%.6f|%.0f|%.6f|%.6f|%s|%s||cpu=0|",
		r.Account, r.User, r.Shares, r.SharesLevel, r.UsageRaw, r.UsageNorm, r.UsageLevel, fs, lf)
}

// TestFairTreeSlurmTest24_4 reproduces every association line that Slurm's Fair
// Tree regression test expects, digit for digit.
func TestFairTreeSlurmTest24_4(t *testing.T) {
	tree, err := TreeFromAssociations(slurmTest24_4.rows)
	if err != nil {
		t.Fatal(err)
	}
	if got := tree.NumUsers(); got != 21 {
		t.Fatalf("users: %d, want 21", got)
	}
	f := ComputeFactors(tree, slurmTest24_4.usage, FactorOptions{})
	got := map[string]bool{}
	for _, r := range f.Rows[1:] {
		got[sshareLine(r)] = true
	}
	for _, want := range test24_4Expected {
		if !got[want] {
			parts := strings.SplitN(want, "|", 3)
			r, _ := f.Get(Assoc{Account: parts[0], User: parts[1]})
			t.Errorf("want %s\n got %s", want, sshareLine(r))
		}
	}
	if len(f.Rows)-1 != len(test24_4Expected) {
		t.Errorf("%d rows, want %d", len(f.Rows)-1, len(test24_4Expected))
	}
}

// TestFairTreeTies checks the tie rules of fair_tree.html on small trees, each
// rank derived by hand.
func TestFairTreeTies(t *testing.T) {
	u := func(acct, user string) Assoc { return Assoc{Account: acct, User: user} }
	tests := []struct {
		name  string
		spec  TreeSpec
		usage map[Assoc]float64
		want  map[Assoc]int // ranks
	}{
		{
			// root{a1:1 used 1, a2:1 used 1, b:1 used 2}: LF a1 = a2 = (1/3)/(1/4)
			// = 1.333, b = (1/3)/(2/4) = 0.667. a1 and a2 tie at rank 3; b gets
			// rank 1 (rank, no ties, has counted down past both).
			name:  "sibling users tie",
			spec:  TreeSpec{Users: []UserSpec{{"a1", 1}, {"a2", 1}, {"b", 1}}},
			usage: map[Assoc]float64{u("root", "a1"): 1, u("root", "a2"): 1, u("root", "b"): 2},
			want:  map[Assoc]int{u("root", "a1"): 3, u("root", "a2"): 3, u("root", "b"): 1},
		},
		{
			// root{x:1 used 1, acct:1{p:1 used 3, q:1 used 1}}: x LF (1/2)/(1/5)
			// = 2.5, acct (1/2)/(4/5) = 0.625; no tie. x rank 3; in acct q LF
			// (1/2)/(1/4) = 2 before p (1/2)/(3/4) = 0.667: q 2, p 1.
			name: "no ties",
			spec: TreeSpec{Users: []UserSpec{{"x", 1}}, Accounts: []AccountSpec{{Name: "acct", Shares: 1,
				Users: []UserSpec{{"p", 1}, {"q", 1}}}}},
			usage: map[Assoc]float64{u("root", "x"): 1, u("acct", "p"): 3, u("acct", "q"): 1},
			want:  map[Assoc]int{u("root", "x"): 3, u("acct", "q"): 2, u("acct", "p"): 1},
		},
		{
			// A user tied with a sibling account gets the rank of the account's
			// highest ranked user: root{x:1 used 1, acct:1 {p:1 used 1}}: both LF
			// (1/2)/(1/2) = 1. x (user first) rank 2, p tied through acct: 2.
			name: "user ties account",
			spec: TreeSpec{Users: []UserSpec{{"x", 1}}, Accounts: []AccountSpec{{Name: "acct", Shares: 1,
				Users: []UserSpec{{"p", 1}}}}},
			usage: map[Assoc]float64{u("root", "x"): 1, u("acct", "p"): 1},
			want:  map[Assoc]int{u("root", "x"): 2, u("acct", "p"): 2},
		},
		{
			// Sibling accounts with equal LF have their children merged before
			// sorting: A and B both LF (1/2)/(1/2) = 1. Children: a1 (1/2)/(1/4) = 2,
			// a2 (1/2)/(3/4) = 0.667, b1 (1/2)/(0.1/4) = 20, b2 (1/2)/(3.9/4) =
			// 0.513. Merged order b1, a1, a2, b2; the first child inherits the
			// accounts' tie (nothing ranked before it: rank stays 4): 4, 3, 2, 1.
			// Without merging it would be a1, a2, b1, b2.
			name: "accounts tie and merge",
			spec: TreeSpec{Accounts: []AccountSpec{
				{Name: "A", Shares: 1, Users: []UserSpec{{"a1", 1}, {"a2", 1}}},
				{Name: "B", Shares: 1, Users: []UserSpec{{"b1", 1}, {"b2", 1}}},
			}},
			usage: map[Assoc]float64{u("A", "a1"): 1, u("A", "a2"): 3, u("B", "b1"): 0.1, u("B", "b2"): 3.9},
			want:  map[Assoc]int{u("B", "b1"): 4, u("A", "a1"): 3, u("A", "a2"): 2, u("B", "b2"): 1},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tree, err := NewTree(tc.spec)
			if err != nil {
				t.Fatal(err)
			}
			f := ComputeFactors(tree, tc.usage, FactorOptions{})
			for a, want := range tc.want {
				r, ok := f.Get(a)
				if !ok {
					t.Fatalf("%v: no row", a)
				}
				if r.FairTreeRank != want {
					t.Errorf("%v: rank %d, want %d (LF %v)", a, r.FairTreeRank, want, r.LevelFS)
				}
				if wf := float64(want) / float64(tree.NumUsers()); r.FairTreeFactor != wf {
					t.Errorf("%v: factor %v, want %v", a, r.FairTreeFactor, wf)
				}
			}
		})
	}
}

// TestClassicEdgeCases covers the branches Slurm special-cases.
func TestClassicEdgeCases(t *testing.T) {
	tree, err := NewTree(TreeSpec{Accounts: []AccountSpec{
		{Name: "zero", Shares: 0, Users: []UserSpec{{"z", 0}}},
		{Name: "one", Shares: 1, Users: []UserSpec{{"o", 1}}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	// No usage at all: UE = 0 everywhere, so F = 2^0 = 1 where S > 0, and 0
	// where S = 0 (Slurm returns 0 for shares_norm <= 0).
	f := ComputeFactors(tree, nil, FactorOptions{})
	if r, _ := f.Get(Assoc{Account: "one", User: "o"}); r.ClassicFactor != 1 {
		t.Errorf("idle user with shares: %v, want 1", r.ClassicFactor)
	}
	if r, _ := f.Get(Assoc{Account: "zero", User: "z"}); r.ClassicFactor != 0 {
		t.Errorf("user without shares: %v, want 0", r.ClassicFactor)
	}
	// "zero"'s only child has 0 shares, so its level shares are 0 and UE is the
	// parent's: zero used everything, UE(zero) = 1, UE(z) = 1.
	f = ComputeFactors(tree, map[Assoc]float64{{Account: "zero", User: "z"}: 5}, FactorOptions{})
	if r, _ := f.Get(Assoc{Account: "zero", User: "z"}); r.UsageEffective != 1 {
		t.Errorf("UE with zero level shares: %v, want parent's 1", r.UsageEffective)
	}
	// Dampening d = 2: user o used all (UE = 1), S = 1: 2^(-1/1/2) = 0.70711.
	f = ComputeFactors(tree, map[Assoc]float64{{Account: "one", User: "o"}: 5}, FactorOptions{Dampening: 2})
	if r, _ := f.Get(Assoc{Account: "one", User: "o"}); !near(r.ClassicFactor, math.Sqrt2/2, 1e-12) {
		t.Errorf("dampened factor %v, want %v", r.ClassicFactor, math.Sqrt2/2)
	}
	// Bad usage values count as zero.
	f = ComputeFactors(tree, map[Assoc]float64{{Account: "one", User: "o"}: math.NaN(), {Account: "zero", User: "z"}: -3}, FactorOptions{})
	if f.Rows[0].UsageRaw != 0 {
		t.Errorf("root usage from NaN and negative inputs: %v, want 0", f.Rows[0].UsageRaw)
	}
}
