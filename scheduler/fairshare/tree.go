package fairshare

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"gopkg.in/yaml.v3"
)

// Shares is an association's raw fair-share shares, as sacctmgr's Fairshare=
// option sets them: a non-negative count, or SharesParent.
type Shares int64

const (
	// SharesParent is sacctmgr's Fairshare=parent: the association takes its
	// parent's normalized shares and effective usage instead of its own. An
	// account marked so is transparent: its children compete as if they were its
	// parent's children.
	SharesParent Shares = -1
	// DefaultShares is what an association gets when no shares are given, as in
	// Slurm.
	DefaultShares Shares = 1
	// MaxShares bounds raw shares to Slurm's 32-bit field.
	MaxShares Shares = math.MaxUint32 - 2
)

// IsParent reports whether s is SharesParent.
func (s Shares) IsParent() bool { return s == SharesParent }

// String is the number, or "parent".
func (s Shares) String() string {
	if s.IsParent() {
		return "parent"
	}
	return strconv.FormatInt(int64(s), 10)
}

// ParseShares reads shares as sacctmgr prints them: a non-negative integer or
// "parent" (case-insensitive).
func ParseShares(v string) (Shares, error) {
	v = strings.TrimSpace(v)
	if strings.EqualFold(v, "parent") {
		return SharesParent, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("shares %q: want a non-negative integer or \"parent\"", v)
	}
	if n < 0 {
		return 0, fmt.Errorf("shares %d out of range: want 0..%d or \"parent\"", n, int64(MaxShares))
	}
	s := Shares(n)
	if err := s.validate(); err != nil {
		return 0, err
	}
	return s, nil
}

func (s Shares) validate() error {
	if s.IsParent() {
		return nil
	}
	if s < 0 || s > MaxShares {
		return fmt.Errorf("shares %d out of range: want 0..%d or \"parent\"", int64(s), int64(MaxShares))
	}
	return nil
}

// UnmarshalYAML accepts an integer or "parent".
func (s *Shares) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return fmt.Errorf("line %d: shares must be an integer or \"parent\"", n.Line)
	}
	v, err := ParseShares(n.Value)
	if err != nil {
		return fmt.Errorf("line %d: %w", n.Line, err)
	}
	*s = v
	return nil
}

// MarshalJSON writes the number, or the string "parent".
func (s Shares) MarshalJSON() ([]byte, error) {
	if s.IsParent() {
		return []byte(`"parent"`), nil
	}
	return []byte(strconv.FormatInt(int64(s), 10)), nil
}

// UnmarshalJSON reads what MarshalJSON writes.
func (s *Shares) UnmarshalJSON(b []byte) error {
	var str string
	if err := json.Unmarshal(b, &str); err == nil {
		v, err := ParseShares(str)
		if err != nil {
			return err
		}
		*s = v
		return nil
	}
	var n int64
	if err := json.Unmarshal(b, &n); err != nil || n < 0 || Shares(n) > MaxShares {
		return fmt.Errorf("shares %s: want an integer in 0..%d or \"parent\"", b, int64(MaxShares))
	}
	*s = Shares(n)
	return nil
}

// RootAccount is the name of the tree's root, as in Slurm.
const RootAccount = "root"

// Assoc names one association: an account (User empty) or a user under an
// account. Usage is charged to user associations.
type Assoc struct {
	Account string `json:"account"`
	User    string `json:"user,omitempty"`
}

func (a Assoc) String() string {
	if a.User == "" {
		return a.Account
	}
	return a.Account + "/" + a.User
}

// TreeSpec describes an account tree as nested data; it is what the YAML
// configuration decodes into, and what code builds a tree from. Users and
// Accounts at the top level hang directly under root.
type TreeSpec struct {
	Accounts []AccountSpec
	Users    []UserSpec
}

// AccountSpec is one account with its shares, users and sub-accounts.
type AccountSpec struct {
	Name     string
	Shares   Shares
	Users    []UserSpec
	Accounts []AccountSpec
}

// UserSpec is one user's association under the enclosing account.
type UserSpec struct {
	Name   string
	Shares Shares
}

// Association is one row of a flat association list, the shape of
// `sacctmgr show assoc format=account,user,parentname,fairshare`: an account
// row (User empty) names its parent account (empty means root); a user row
// belongs to Account. A row for the root account itself is ignored.
type Association struct {
	Account string
	Parent  string
	User    string
	Shares  Shares
}

// Tree is an immutable account tree: root, accounts, users as leaves. It is
// safe for concurrent use.
type Tree struct {
	nodes    []node // pre-order; nodes[0] is root
	users    int
	accounts map[string]int
	assocs   map[Assoc]int
}

type node struct {
	name     string // account name, or user name
	account  string // the account (itself for accounts; the owning account for users)
	user     bool
	shares   Shares
	parent   int // -1 for root
	depth    int
	children []int
}

// NewTree builds a tree from nested specs. Names must be non-empty and free of
// whitespace and '/'; account names are unique in the whole tree (as in
// Slurm) and may not be "root"; a user appears at most once per account.
func NewTree(spec TreeSpec) (*Tree, error) {
	b := newBuilder()
	if err := b.addUsers(0, spec.Users, "users"); err != nil {
		return nil, err
	}
	for i, a := range spec.Accounts {
		if err := b.addAccount(0, a, fmt.Sprintf("accounts[%d]", i)); err != nil {
			return nil, err
		}
	}
	return b.tree(), nil
}

// TreeFromAssociations builds a tree from a flat association list, in any
// order. Errors name the row (0-based) and the problem.
func TreeFromAssociations(rows []Association) (*Tree, error) {
	type acct struct {
		row    int
		parent string
		shares Shares
	}
	accts := map[string]acct{}
	var order []string
	users := map[string][]int{}
	for i, r := range rows {
		where := fmt.Sprintf("association %d (account %q", i, r.Account)
		if r.User != "" {
			where += fmt.Sprintf(", user %q", r.User)
		}
		where += ")"
		if err := checkName(r.Account); err != nil {
			return nil, fmt.Errorf("%s: account: %w", where, err)
		}
		if err := r.Shares.validate(); err != nil {
			return nil, fmt.Errorf("%s: %w", where, err)
		}
		if r.User != "" {
			if err := checkName(r.User); err != nil {
				return nil, fmt.Errorf("%s: user: %w", where, err)
			}
			users[r.Account] = append(users[r.Account], i)
			continue
		}
		if r.Account == RootAccount {
			continue
		}
		if _, dup := accts[r.Account]; dup {
			return nil, fmt.Errorf("%s: account defined twice (first in association %d)", where, accts[r.Account].row)
		}
		p := r.Parent
		if p == "" {
			p = RootAccount
		}
		accts[r.Account] = acct{row: i, parent: p, shares: r.Shares}
		order = append(order, r.Account)
	}
	children := map[string][]string{}
	for _, name := range order {
		a := accts[name]
		if a.parent != RootAccount {
			if _, ok := accts[a.parent]; !ok {
				return nil, fmt.Errorf("association %d (account %q): parent account %q is not defined", a.row, name, a.parent)
			}
		}
		children[a.parent] = append(children[a.parent], name)
	}
	for acc, rs := range users {
		if _, ok := accts[acc]; !ok && acc != RootAccount {
			return nil, fmt.Errorf("association %d (account %q, user %q): account is not defined", rs[0], acc, rows[rs[0]].User)
		}
	}
	b := newBuilder()
	var add func(parent int, account string) error
	add = func(parent int, account string) error {
		for _, ri := range users[account] {
			r := rows[ri]
			if err := b.addUser(parent, r.User, r.Shares, fmt.Sprintf("association %d", ri)); err != nil {
				return err
			}
		}
		for _, c := range children[account] {
			a := accts[c]
			idx, err := b.addAccountNode(parent, c, a.shares, fmt.Sprintf("association %d", a.row))
			if err != nil {
				return err
			}
			if err := add(idx, c); err != nil {
				return err
			}
		}
		return nil
	}
	if err := add(0, RootAccount); err != nil {
		return nil, err
	}
	// Every account has one parent, so an account that root does not reach
	// sits on a parent cycle.
	for _, name := range order {
		if _, ok := b.accounts[name]; !ok {
			return nil, fmt.Errorf("association %d (account %q): parent chain has a cycle and never reaches root", accts[name].row, name)
		}
	}
	return b.tree(), nil
}

type builder struct {
	nodes    []node
	users    int
	accounts map[string]int
	assocs   map[Assoc]int
}

func newBuilder() *builder {
	b := &builder{accounts: map[string]int{RootAccount: 0}, assocs: map[Assoc]int{{Account: RootAccount}: 0}}
	b.nodes = append(b.nodes, node{name: RootAccount, account: RootAccount, shares: DefaultShares, parent: -1})
	return b
}

func (b *builder) tree() *Tree {
	return &Tree{nodes: b.nodes, users: b.users, accounts: b.accounts, assocs: b.assocs}
}

func (b *builder) addAccount(parent int, a AccountSpec, path string) error {
	idx, err := b.addAccountNode(parent, a.Name, a.Shares, path)
	if err != nil {
		return err
	}
	if err := b.addUsers(idx, a.Users, path+".users"); err != nil {
		return err
	}
	for i, c := range a.Accounts {
		if err := b.addAccount(idx, c, fmt.Sprintf("%s.accounts[%d]", path, i)); err != nil {
			return err
		}
	}
	return nil
}

func (b *builder) addAccountNode(parent int, name string, shares Shares, path string) (int, error) {
	if err := checkName(name); err != nil {
		return 0, fmt.Errorf("%s: account name: %w", path, err)
	}
	if name == RootAccount {
		return 0, fmt.Errorf("%s: account name %q is reserved for the tree's root", path, name)
	}
	if _, dup := b.accounts[name]; dup {
		return 0, fmt.Errorf("%s: account %q is defined twice (account names are unique in the tree)", path, name)
	}
	if err := shares.validate(); err != nil {
		return 0, fmt.Errorf("%s (account %q): %w", path, name, err)
	}
	idx := len(b.nodes)
	b.nodes = append(b.nodes, node{name: name, account: name, shares: shares, parent: parent, depth: b.nodes[parent].depth + 1})
	b.nodes[parent].children = append(b.nodes[parent].children, idx)
	b.accounts[name] = idx
	b.assocs[Assoc{Account: name}] = idx
	return idx, nil
}

func (b *builder) addUsers(parent int, us []UserSpec, path string) error {
	for i, u := range us {
		if err := b.addUser(parent, u.Name, u.Shares, fmt.Sprintf("%s[%d]", path, i)); err != nil {
			return err
		}
	}
	return nil
}

func (b *builder) addUser(parent int, name string, shares Shares, path string) error {
	acct := b.nodes[parent].account
	if err := checkName(name); err != nil {
		return fmt.Errorf("%s: user name: %w", path, err)
	}
	key := Assoc{Account: acct, User: name}
	if _, dup := b.assocs[key]; dup {
		return fmt.Errorf("%s: user %q appears twice in account %q", path, name, acct)
	}
	if err := shares.validate(); err != nil {
		return fmt.Errorf("%s (user %q in account %q): %w", path, name, acct, err)
	}
	idx := len(b.nodes)
	b.nodes = append(b.nodes, node{name: name, account: acct, user: true, shares: shares, parent: parent, depth: b.nodes[parent].depth + 1})
	b.nodes[parent].children = append(b.nodes[parent].children, idx)
	b.assocs[key] = idx
	b.users++
	return nil
}

var errEmptyName = errors.New("name is empty")

func checkName(n string) error {
	if n == "" {
		return errEmptyName
	}
	if len(n) > 256 {
		return fmt.Errorf("name %.20q... is longer than 256 bytes", n)
	}
	for _, r := range n {
		if r == '/' || unicode.IsSpace(r) || unicode.IsControl(r) || r == utf8.RuneError {
			return fmt.Errorf("name %q contains %q: names may not contain whitespace, control characters, invalid UTF-8 or '/'", n, r)
		}
	}
	return nil
}

// Users lists every user association in tree order.
func (t *Tree) Users() []Assoc {
	out := make([]Assoc, 0, t.users)
	for _, n := range t.nodes {
		if n.user {
			out = append(out, Assoc{Account: n.account, User: n.name})
		}
	}
	return out
}

// NumUsers is the number of user associations; Fair Tree divides ranks by it.
func (t *Tree) NumUsers() int { return t.users }

// Has reports whether the association exists (User empty: the account).
func (t *Tree) Has(a Assoc) bool {
	_, ok := t.assocs[a]
	return ok
}
