package fairshare

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestParseShares(t *testing.T) {
	for in, want := range map[string]Shares{"0": 0, "40": 40, " 7 ": 7, "parent": SharesParent, "Parent": SharesParent} {
		got, err := ParseShares(in)
		if err != nil || got != want {
			t.Errorf("ParseShares(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "-1", "1.5", "lots", "4294967295"} {
		if _, err := ParseShares(in); err == nil {
			t.Errorf("ParseShares(%q) accepted", in)
		}
	}
	b, _ := json.Marshal([]Shares{3, SharesParent})
	if string(b) != `[3,"parent"]` {
		t.Errorf("JSON %s", b)
	}
	var back []Shares
	if err := json.Unmarshal(b, &back); err != nil || back[0] != 3 || back[1] != SharesParent {
		t.Errorf("JSON round trip %v %v", back, err)
	}
}

func TestTreeFromAssociationsErrors(t *testing.T) {
	tests := []struct {
		name string
		rows []Association
		want string
	}{
		{"missing parent", []Association{{Account: "a", Parent: "ghost", Shares: 1}},
			`association 0 (account "a"): parent account "ghost" is not defined`},
		{"user of missing account", []Association{{Account: "a", User: "u", Shares: 1}},
			`association 0 (account "a", user "u"): account is not defined`},
		{"duplicate account", []Association{{Account: "a", Shares: 1}, {Account: "a", Shares: 2}},
			`association 1 (account "a"): account defined twice (first in association 0)`},
		{"cycle", []Association{{Account: "a", Parent: "b", Shares: 1}, {Account: "b", Parent: "a", Shares: 1}},
			"parent chain has a cycle"},
		{"duplicate user", []Association{{Account: "a", Shares: 1}, {Account: "a", User: "u", Shares: 1}, {Account: "a", User: "u", Shares: 1}},
			`association 2: user "u" appears twice in account "a"`},
		{"bad shares", []Association{{Account: "a", Shares: -5}}, "shares -5 out of range"},
		{"empty account", []Association{{Account: "", User: "u"}}, "account: name is empty"},
	}
	for _, tc := range tests {
		_, err := TreeFromAssociations(tc.rows)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
}

// The same tree from nested specs and from flat rows in scrambled order.
func TestTreeFromAssociationsMatchesSpec(t *testing.T) {
	rows := []Association{
		{Account: "hep", User: "carol", Shares: 1},
		{Account: "hep", Parent: "physics", Shares: 30},
		{Account: RootAccount, Shares: 1},
		{Account: "physics", User: "alice", Shares: 2},
		{Account: "physics", Shares: 40},
		{Account: RootAccount, User: "ops", Shares: 1},
	}
	flat, err := TreeFromAssociations(rows)
	if err != nil {
		t.Fatal(err)
	}
	nested, err := NewTree(TreeSpec{Users: []UserSpec{{"ops", 1}}, Accounts: []AccountSpec{{Name: "physics", Shares: 40,
		Users: []UserSpec{{"alice", 2}}, Accounts: []AccountSpec{{Name: "hep", Shares: 30, Users: []UserSpec{{"carol", 1}}}}}}})
	if err != nil {
		t.Fatal(err)
	}
	usage := map[Assoc]float64{{Account: "hep", User: "carol"}: 5, {Account: "physics", User: "alice"}: 1}
	a, b := ComputeFactors(flat, usage, FactorOptions{}), ComputeFactors(nested, usage, FactorOptions{})
	if len(a.Rows) != len(b.Rows) {
		t.Fatalf("%d rows vs %d", len(a.Rows), len(b.Rows))
	}
	for _, r := range b.Rows[1:] {
		got, ok := a.Get(r.Assoc)
		if !ok || got.Parent != r.Parent || got.SharesNorm != r.SharesNorm || got.ClassicFactor != r.ClassicFactor || got.FairTreeRank != r.FairTreeRank {
			t.Errorf("%v: flat %+v, nested %+v", r.Assoc, got, r)
		}
	}
	if !flat.Has(Assoc{Account: "root", User: "ops"}) || flat.Has(Assoc{Account: "hep", User: "alice"}) {
		t.Error("Has")
	}
}
