package fairshare

import (
	"fmt"
	"math"
	"sort"
)

// Algorithm names a fair-share algorithm.
type Algorithm string

const (
	// FairTree is Slurm's default since 19.05 (fair_tree.html).
	FairTree Algorithm = "fair_tree"
	// Classic is Slurm's PriorityFlags=NO_FAIR_TREE (classic_fair_share.html).
	Classic Algorithm = "classic"
)

func (a Algorithm) validate() error {
	switch a {
	case FairTree, Classic:
		return nil
	}
	return fmt.Errorf("algorithm %q: want %q or %q", string(a), FairTree, Classic)
}

// FactorOptions tunes ComputeFactors.
type FactorOptions struct {
	// Dampening is Slurm's FairShareDampeningFactor d in F = 2^(-UE/S/d) for
	// the classic algorithm; 0 means 1, Slurm's default.
	Dampening float64
}

// Row is one association's shares, usage and factors, in the vocabulary of
// sshare -l.
type Row struct {
	Assoc
	// Parent is the parent account ("" for root).
	Parent string
	// Depth is 0 for root, 1 for its children, and so on.
	Depth int
	// Shares is the raw shares.
	Shares Shares
	// SharesNorm is the classic normalized shares: the product of share
	// fractions from root down (S_user/S_siblings * S_account/S_sibling-accounts
	// * ...). With Fairshare=parent, the parent's.
	SharesNorm float64
	// SharesLevel is Fair Tree's S: raw shares over the shares of itself and
	// its siblings. With Fairshare=parent, the parent's.
	SharesLevel float64
	// UsageRaw is the decayed charged usage (GPU-seconds) of the association
	// and everything under it.
	UsageRaw float64
	// UsageNorm is UsageRaw over root's, capped at 1 (Slurm's usage_norm).
	UsageNorm float64
	// UsageEffective is the classic effective usage UE.
	UsageEffective float64
	// UsageLevel is Fair Tree's U: UsageRaw over the parent's UsageRaw (0 when
	// the parent has none).
	UsageLevel float64
	// ClassicFactor is 2^(-UE/S/d), 0 when S is 0.
	ClassicFactor float64
	// LevelFS is Fair Tree's S/U (+Inf with no usage, 0 with no shares; +Inf for
	// a Fairshare=parent user). NaN for root and Fairshare=parent accounts,
	// which Fair Tree looks through.
	LevelFS float64
	// FairTreeFactor is rank/users for users, NaN for accounts.
	FairTreeFactor float64
	// FairTreeRank is the user's rank (users count down to 1), 0 for accounts.
	FairTreeRank int
}

// Factors is the result of ComputeFactors: one row per association in tree
// pre-order (root first, then each account followed by its users and
// sub-accounts).
type Factors struct {
	Rows  []Row
	index map[Assoc]int
}

// Get returns the row of an association.
func (f *Factors) Get(a Assoc) (Row, bool) {
	i, ok := f.index[a]
	if !ok {
		return Row{}, false
	}
	return f.Rows[i], true
}

// Factor returns a user's factor under the algorithm.
func (f *Factors) Factor(alg Algorithm, a Assoc) (float64, bool) {
	r, ok := f.Get(a)
	if !ok || a.User == "" {
		return 0, false
	}
	if alg == Classic {
		return r.ClassicFactor, true
	}
	return r.FairTreeFactor, true
}

// ComputeFactors computes both algorithms' factors for every association of
// the tree from charged usage per user association (decayed GPU-seconds, or any
// unit: only ratios matter). Usage keyed by an association the tree lacks, or
// by an account, is ignored; negative, NaN and infinite values count as 0.
func ComputeFactors(t *Tree, usage map[Assoc]float64, opts FactorOptions) *Factors {
	d := opts.Dampening
	if !(d > 0) || math.IsInf(d, 0) {
		d = 1
	}
	c := &calc{t: t, rows: make([]Row, len(t.nodes)), damp: d}
	// Raw usage, summed up the tree.
	for i := len(t.nodes) - 1; i >= 0; i-- {
		n := &t.nodes[i]
		if n.user {
			u := usage[Assoc{Account: n.account, User: n.name}]
			if !(u > 0) || math.IsInf(u, 1) {
				u = 0
			}
			c.rows[i].UsageRaw = u
		}
		if n.parent >= 0 {
			c.rows[n.parent].UsageRaw += c.rows[i].UsageRaw
		}
	}
	for i := range t.nodes {
		n := &t.nodes[i]
		r := &c.rows[i]
		r.Assoc = Assoc{Account: n.account}
		if n.user {
			r.User = n.name
		}
		if n.parent >= 0 {
			r.Parent = t.nodes[n.parent].account
		}
		r.Depth = n.depth
		r.Shares = n.shares
		r.LevelFS = math.NaN()
		r.FairTreeFactor = math.NaN()
	}
	c.fsParent = make([]int, len(t.nodes))
	c.fsParent[0] = -1
	for i := 1; i < len(t.nodes); i++ {
		p := t.nodes[i].parent
		for p != 0 && t.nodes[p].shares.IsParent() {
			p = t.nodes[p].parent
		}
		c.fsParent[i] = p
	}
	c.fsKids = make([][]int, len(t.nodes))
	c.level = make([]float64, len(t.nodes))
	for i := range t.nodes {
		if !t.nodes[i].user {
			c.fsKids[i] = c.fsChildren(i, nil)
			c.level[i] = c.levelShares(c.fsKids[i])
		}
	}
	c.classic()
	c.fairTree()
	idx := make(map[Assoc]int, len(c.rows))
	for i, r := range c.rows {
		idx[r.Assoc] = i
	}
	return &Factors{Rows: c.rows, index: idx}
}

type calc struct {
	t        *Tree
	rows     []Row
	fsParent []int     // nearest ancestor that is not a Fairshare=parent account
	fsKids   [][]int   // fsChildren of each account
	level    []float64 // level shares of each account's fsKids
	damp     float64
}

// fsChildren are the associations that compete under account i: its children,
// with each Fairshare=parent account replaced by its own fsChildren.
func (c *calc) fsChildren(i int, out []int) []int {
	for _, ch := range c.t.nodes[i].children {
		n := &c.t.nodes[ch]
		if !n.user && n.shares.IsParent() {
			out = c.fsChildren(ch, out)
			continue
		}
		out = append(out, ch)
	}
	return out
}

func (c *calc) levelShares(sibs []int) float64 {
	var sum float64
	for _, s := range sibs {
		if sh := c.t.nodes[s].shares; !sh.IsParent() {
			sum += float64(sh)
		}
	}
	return sum
}

// classic sets SharesNorm, SharesLevel, UsageNorm, UsageEffective and
// ClassicFactor, top down as Slurm's priority_multifactor.c does.
func (c *calc) classic() {
	rootRaw := c.rows[0].UsageRaw
	root := &c.rows[0]
	root.SharesNorm, root.SharesLevel = 1, 1
	root.UsageEffective = 1 // Slurm sets root's usage_efctv to 1.0
	if rootRaw > 0 {
		root.UsageNorm = 1
	}
	root.ClassicFactor = math.NaN()
	var walk func(acct int)
	walk = func(acct int) {
		sibs, level := c.fsKids[acct], c.level[acct]
		for _, s := range sibs {
			c.setClassic(s, acct, level, rootRaw)
			if !c.t.nodes[s].user {
				walk(s)
			}
		}
	}
	walk(0)
	// Fairshare=parent accounts are looked through; give their rows the
	// values they stand for: their fs parent's.
	for i := 1; i < len(c.t.nodes); i++ {
		n := &c.t.nodes[i]
		if n.user || !n.shares.IsParent() {
			continue
		}
		p := c.fsParent[i]
		r, pr := &c.rows[i], &c.rows[p]
		r.UsageNorm = usageNorm(r.UsageRaw, rootRaw)
		r.SharesNorm, r.SharesLevel, r.UsageEffective = pr.SharesNorm, pr.SharesLevel, pr.UsageEffective
		r.ClassicFactor = c.classicFactor(r.UsageEffective, r.SharesNorm)
		r.UsageLevel = ratio(r.UsageRaw, pr.UsageRaw)
	}
}

func usageNorm(raw, rootRaw float64) float64 {
	if !(rootRaw > 0) {
		return 0
	}
	return math.Min(raw/rootRaw, 1)
}

func ratio(a, b float64) float64 {
	if !(b > 0) {
		return 0
	}
	return a / b
}

func (c *calc) setClassic(i, fsParent int, level, rootRaw float64) {
	r, pr := &c.rows[i], &c.rows[fsParent]
	sh := c.t.nodes[i].shares
	r.UsageNorm = usageNorm(r.UsageRaw, rootRaw)
	switch {
	case sh.IsParent():
		r.SharesNorm, r.SharesLevel = pr.SharesNorm, pr.SharesLevel
	case level > 0:
		r.SharesLevel = float64(sh) / level
		r.SharesNorm = pr.SharesNorm * r.SharesLevel
	}
	switch {
	case fsParent == 0:
		// First tier: effective usage is the normalized usage.
		r.UsageEffective = r.UsageNorm
	case sh.IsParent():
		r.UsageEffective = pr.UsageEffective
	case level == 0:
		r.UsageEffective = pr.UsageEffective
	default:
		// UE = UA_child + (UE_parent - UA_child) * S_child/S_all_siblings
		r.UsageEffective = r.UsageNorm + (pr.UsageEffective-r.UsageNorm)*(float64(sh)/level)
	}
	r.ClassicFactor = c.classicFactor(r.UsageEffective, r.SharesNorm)
}

func (c *calc) classicFactor(ue, s float64) float64 {
	if !(s > 0) {
		return 0
	}
	return math.Exp2(-(ue / s) / c.damp)
}

// fairTree sets UsageLevel, LevelFS, FairTreeRank and FairTreeFactor.
func (c *calc) fairTree() {
	rank, rnt := c.t.users, c.t.users
	c.rankSiblings(append([]int(nil), c.fsKids[0]...), &rank, &rnt, false)
}

// levelFS computes LF = S/U for association i among its fs siblings, as
// fair_tree.c's _calc_assoc_fs: S = shares/level shares, U = usage/parent usage;
// S == 0 gives 0, U == 0 (with S > 0) gives +Inf, a Fairshare=parent user +Inf.
func (c *calc) levelFS(i int, level float64) {
	r := &c.rows[i]
	p := c.fsParent[i]
	r.UsageLevel = ratio(r.UsageRaw, c.rows[p].UsageRaw)
	sh := c.t.nodes[i].shares
	if sh.IsParent() {
		// Only users are ever ranked with parent shares: accounts are flattened.
		r.LevelFS = math.Inf(1)
		return
	}
	s := 0.0
	if level > 0 {
		s = float64(sh) / level
	}
	if s == 0 {
		r.LevelFS = 0
		return
	}
	r.LevelFS = s / r.UsageLevel // U == 0 gives +Inf, a valid value
}

// rankSiblings is fair_tree.c's _calc_tree_fs: sort siblings by LevelFS (users
// before accounts on ties), walk them in order, give users rank/N and descend
// into accounts. Ties: sibling users with equal LF share a rank; a user tied
// with a sibling account shares the rank of that account's highest ranked user;
// sibling accounts with equal LF have their children merged before descending
// (fair_tree.html, "Ties").
//
// The merge follows the documentation. Slurm's own _count_tied_accounts stops
// at the first following account (it tests !next->user where its comment says
// users sort first), so Slurm walks tied accounts one after the other, the
// first child of each inheriting the tie. The two agree whenever the tied
// accounts' children have no usage (the usual tie: LF inf), as in Slurm's
// test24.4; they differ only when tied accounts' children have different LF
// (see TestFairTreeTies, "accounts tie and merge"). Equal floating-point
// values tie exactly, as in Slurm.
func (c *calc) rankSiblings(sibs []int, rank, rnt *int, accountTied bool) {
	// Level shares are per fs parent: merged siblings may come from several.
	for _, s := range sibs {
		c.levelFS(s, c.level[c.fsParent[s]])
	}
	sort.SliceStable(sibs, func(a, b int) bool {
		la, lb := c.rows[sibs[a]].LevelFS, c.rows[sibs[b]].LevelFS
		if la != lb {
			return la > lb
		}
		return c.t.nodes[sibs[a]].user && !c.t.nodes[sibs[b]].user
	})
	n := float64(c.t.users)
	prev, havePrev := 0.0, false
	for i := 0; i < len(sibs); i++ {
		s := sibs[i]
		lf := c.rows[s].LevelFS
		tied := havePrev && prev == lf
		if i == 0 && accountTied {
			tied = true
		}
		if c.t.nodes[s].user {
			if !tied {
				*rank = *rnt
			}
			c.rows[s].FairTreeRank = *rank
			c.rows[s].FairTreeFactor = float64(*rank) / n
			*rnt--
		} else {
			j := i
			for j+1 < len(sibs) && !c.t.nodes[sibs[j+1]].user && c.rows[sibs[j+1]].LevelFS == lf {
				j++
			}
			var children []int
			for k := i; k <= j; k++ {
				children = append(children, c.fsKids[sibs[k]]...)
			}
			c.rankSiblings(children, rank, rnt, tied)
			i = j
		}
		prev, havePrev = lf, true
	}
}
