package fairshare

import (
	"fmt"
	"math"
	"testing"

	"pgregory.net/rapid"
)

// genTree draws a random account tree (up to 4 levels, a few accounts and users
// per level) and integer usage per user. With parent, shares may be
// Fairshare=parent.
func genTree(t *rapid.T, parent bool) (*Tree, map[Assoc]float64) {
	n := 0
	lo := 0
	if parent {
		lo = -1
	}
	shares := func(label string) Shares {
		v := rapid.IntRange(lo, 10).Draw(t, label)
		if v < 0 {
			return SharesParent
		}
		return Shares(v)
	}
	users := func() []UserSpec {
		var us []UserSpec
		for i := range rapid.IntRange(0, 3).Draw(t, "users") {
			us = append(us, UserSpec{Name: fmt.Sprintf("u%d", i), Shares: shares("user_shares")})
		}
		return us
	}
	var account func(depth int) AccountSpec
	account = func(depth int) AccountSpec {
		n++
		a := AccountSpec{Name: fmt.Sprintf("a%d", n), Shares: shares("account_shares"), Users: users()}
		if depth < 3 {
			for range rapid.IntRange(0, 3).Draw(t, "subaccounts") {
				a.Accounts = append(a.Accounts, account(depth+1))
			}
		}
		return a
	}
	var spec TreeSpec
	if rapid.Bool().Draw(t, "root_users") {
		spec.Users = users()
	}
	for range rapid.IntRange(1, 4).Draw(t, "top_accounts") {
		spec.Accounts = append(spec.Accounts, account(1))
	}
	tree, err := NewTree(spec)
	if err != nil {
		t.Fatalf("generated tree: %v", err)
	}
	usage := map[Assoc]float64{}
	for _, u := range tree.Users() {
		usage[u] = float64(rapid.IntRange(0, 100).Draw(t, "usage"))
	}
	return tree, usage
}

// Every factor is in [0,1]; Fair Tree factors of users are k/N with k in 1..N.
func TestPropFactorsInRange(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		tree, usage := genTree(t, true)
		f := ComputeFactors(tree, usage, FactorOptions{})
		for _, r := range f.Rows[1:] {
			if !(r.ClassicFactor >= 0 && r.ClassicFactor <= 1) {
				t.Fatalf("%v: classic factor %v outside [0,1]", r.Assoc, r.ClassicFactor)
			}
			if r.User == "" {
				continue
			}
			if !(r.FairTreeFactor > 0 && r.FairTreeFactor <= 1) {
				t.Fatalf("%v: fair tree factor %v outside (0,1]", r.Assoc, r.FairTreeFactor)
			}
			if r.FairTreeRank < 1 || r.FairTreeRank > tree.NumUsers() {
				t.Fatalf("%v: rank %d outside 1..%d", r.Assoc, r.FairTreeRank, tree.NumUsers())
			}
		}
	})
}

// More usage never raises a user's own factor, under either algorithm, all
// else held equal.
func TestPropMoreUsageNeverRaisesFactor(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		tree, usage := genTree(t, true)
		users := tree.Users()
		if len(users) == 0 {
			t.Skip("no users")
		}
		x := users[rapid.IntRange(0, len(users)-1).Draw(t, "user")]
		before := ComputeFactors(tree, usage, FactorOptions{})
		usage[x] += float64(rapid.IntRange(1, 1000).Draw(t, "more"))
		after := ComputeFactors(tree, usage, FactorOptions{})
		b, _ := before.Get(x)
		a, _ := after.Get(x)
		if a.ClassicFactor > b.ClassicFactor+1e-12 {
			t.Fatalf("%v: classic factor rose from %v to %v with more usage", x, b.ClassicFactor, a.ClassicFactor)
		}
		if a.FairTreeFactor > b.FairTreeFactor {
			t.Fatalf("%v: fair tree factor rose from %v to %v with more usage", x, b.FairTreeFactor, a.FairTreeFactor)
		}
	})
}

// A top-level account whose usage is exactly its share gets 0.5 under classic,
// and so does a sole user (the only share holder) under it: UE = UE(parent).
func TestPropClassicAtShareIsHalf(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		tree, usage := genTree(t, false)
		top := tree.nodes[0].children
		pick := top[rapid.IntRange(0, len(top)-1).Draw(t, "account")]
		acct := &tree.nodes[pick]
		var level float64
		for _, c := range top {
			level += float64(tree.nodes[c].shares)
		}
		share := float64(acct.shares) / level
		var inside []Assoc
		for _, u := range tree.Users() {
			if tree.under(u, pick) {
				inside = append(inside, u)
			}
		}
		if acct.user || acct.shares == 0 || share == 1 || len(inside) == 0 {
			t.Skip("need an account with a share below the whole machine and a user under it")
		}
		var others float64
		for u, v := range usage {
			if !tree.under(u, pick) {
				others += v
			}
		}
		if others == 0 {
			t.Skip("no usage elsewhere")
		}
		// X/(X+O) = share  =>  X = share*O/(1-share), spread over its users.
		x := share * others / (1 - share)
		for i, u := range inside {
			usage[u] = x / float64(len(inside))
			if i == 0 {
				usage[u] += x - x/float64(len(inside))*float64(len(inside))
			}
		}
		f := ComputeFactors(tree, usage, FactorOptions{})
		r, _ := f.Get(Assoc{Account: acct.account})
		if !near(r.ClassicFactor, 0.5, 1e-9) {
			t.Fatalf("%s at its share (S %v, UE %v): factor %v, want 0.5", acct.account, r.SharesNorm, r.UsageEffective, r.ClassicFactor)
		}
		if len(acct.children) == 1 && tree.nodes[acct.children[0]].user {
			u := tree.nodes[acct.children[0]]
			if u.shares > 0 {
				ur, _ := f.Get(Assoc{Account: acct.account, User: u.name})
				if !near(ur.ClassicFactor, 0.5, 1e-9) {
					t.Fatalf("sole user %s of an account at its share: factor %v, want 0.5", u.name, ur.ClassicFactor)
				}
			}
		}
	})
}

// under reports whether association a lies in the subtree of node i.
func (t *Tree) under(a Assoc, i int) bool {
	for j := t.assocs[a]; j >= 0; j = t.nodes[j].parent {
		if j == i {
			return true
		}
	}
	return false
}

// Fair Tree's guarantee: if sibling A (account or user) has a higher level
// fairshare than sibling B, every user under A ranks above every user under B.
// In particular a user of an under-served account (LF > 1) ranks above every
// user of an over-served sibling account (LF < 1).
func TestPropFairTreeSiblingGuarantee(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		tree, usage := genTree(t, false)
		f := ComputeFactors(tree, usage, FactorOptions{})
		usersUnder := func(i int) []Row {
			var out []Row
			for _, u := range tree.Users() {
				if tree.under(u, i) {
					r, _ := f.Get(u)
					out = append(out, r)
				}
			}
			return out
		}
		for p := range tree.nodes {
			if tree.nodes[p].user {
				continue
			}
			sibs := tree.nodes[p].children
			for _, a := range sibs {
				for _, b := range sibs {
					la, lb := f.Rows[a].LevelFS, f.Rows[b].LevelFS
					if !(la > lb) {
						continue
					}
					ua, ub := usersUnder(a), usersUnder(b)
					for _, x := range ua {
						for _, y := range ub {
							if !(x.FairTreeFactor > y.FairTreeFactor) {
								t.Fatalf("siblings under %s: %v (LF %v) > %v (LF %v), but user %v (%v) does not rank above %v (%v)",
									tree.nodes[p].account, f.Rows[a].Assoc, la, f.Rows[b].Assoc, lb, x.Assoc, x.FairTreeFactor, y.Assoc, y.FairTreeFactor)
							}
						}
					}
				}
			}
		}
	})
}

func TestPropFairTreeLevelFS(t *testing.T) {
	// LF > 1 exactly when the association used less than its share among
	// siblings: S/U > 1 <=> U < S.
	rapid.Check(t, func(t *rapid.T) {
		tree, usage := genTree(t, false)
		f := ComputeFactors(tree, usage, FactorOptions{})
		for _, r := range f.Rows[1:] {
			if r.SharesLevel == 0 || math.IsInf(r.LevelFS, 1) {
				continue
			}
			if (r.LevelFS > 1) != (r.UsageLevel < r.SharesLevel) && !near(r.UsageLevel, r.SharesLevel, 1e-12) {
				t.Fatalf("%v: LF %v but U %v vs S %v", r.Assoc, r.LevelFS, r.UsageLevel, r.SharesLevel)
			}
		}
	})
}
