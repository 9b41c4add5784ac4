package fairshare

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode"

	"gopkg.in/yaml.v3"

	"github.com/gpuwatch/gpuwatch/internal/yamlfile"
)

const exampleConfig = `
algorithm: classic
charge: blend
blend_weight: 0.75
idle_floor: 0.05
half_life: 72h
stale_after: 2m
dampening: 2
users:
  - {name: ops, shares: 1}
accounts:
  - name: physics
    shares: 40
    users:
      - {name: alice, shares: 2}
      - {name: bob}
    accounts:
      - name: hep
        shares: parent
        users: [{name: carol}]
  - name: bio
    shares: 60
    users: [{name: alice}]
`

func TestParseConfig(t *testing.T) {
	c, err := ParseConfig("policy.yaml", []byte(exampleConfig))
	if err != nil {
		t.Fatal(err)
	}
	if c.Algorithm != Classic || c.Policy != (Policy{Charge: ChargeBlend, BlendWeight: 0.75, IdleFloor: 0.05}) ||
		c.HalfLife != 72*time.Hour || c.StaleAfter != 2*time.Minute || c.Dampening != 2 {
		t.Errorf("settings: %+v", c)
	}
	if got := c.Tree.NumUsers(); got != 5 {
		t.Errorf("users: %d, want 5 (ops, alice, bob, carol, alice in bio)", got)
	}
	f := ComputeFactors(c.Tree, nil, FactorOptions{})
	// bob's shares default to 1: alice 2/3, bob 1/3 of physics's users... and
	// physics's children are alice 2, bob 1 and carol (hep is parent: carol
	// competes directly under physics) 1: level 4, so bob's level share 1/4.
	if r, _ := f.Get(Assoc{Account: "physics", User: "bob"}); r.Shares != 1 || r.SharesLevel != 0.25 {
		t.Errorf("bob: shares %v level %v, want default 1 and 1/4", r.Shares, r.SharesLevel)
	}
	if r, _ := f.Get(Assoc{Account: "hep"}); !r.Shares.IsParent() {
		t.Errorf("hep shares %v, want parent", r.Shares)
	}
	lo := c.LedgerOptions()
	if lo.HalfLife != 72*time.Hour || lo.StaleAfter != 2*time.Minute || lo.Policy != c.Policy {
		t.Errorf("ledger options %+v", lo)
	}
}

func TestParseConfigDefaults(t *testing.T) {
	c, err := ParseConfig("p.yaml", []byte("accounts: [{name: a, users: [{name: u}]}]"))
	if err != nil {
		t.Fatal(err)
	}
	if c.Algorithm != FairTree || c.Policy != (Policy{Charge: ChargeMeasured, IdleFloor: DefaultIdleFloor}) ||
		c.HalfLife != DefaultHalfLife || c.StaleAfter != DefaultStaleAfter || c.Dampening != 1 {
		t.Errorf("defaults: %+v", c)
	}
}

func TestParseConfigErrors(t *testing.T) {
	tests := []struct {
		name, yaml, want string
	}{
		{"empty", "", "policy.yaml: accounts: no accounts: define at least one under accounts:"},
		{"unknown field", "acounts: []", `policy.yaml:1: acounts: unknown field, did you mean "accounts"? (want one of algorithm, charge,`},
		{"bad algorithm", "algorithm: fifo\naccounts: [{name: a}]", `policy.yaml:1: algorithm: algorithm "fifo": want "fair_tree" or "classic"`},
		{"bad charge", "charge: free\naccounts: [{name: a}]", `policy.yaml:1: charge: charge "free": want`},
		{"blend without weight", "charge: blend\naccounts: [{name: a}]", "policy.yaml:1: charge: blend needs blend_weight"},
		{"weight without blend", "blend_weight: 0.5\naccounts: [{name: a}]", `policy.yaml:1: blend_weight: set but charge is "measured": it applies only to charge: blend`},
		{"weight out of range", "charge: blend\nblend_weight: 2\naccounts: [{name: a}]", "policy.yaml:2: blend_weight: blend weight 2: want a value in [0,1]"},
		{"floor out of range", "idle_floor: -0.1\naccounts: [{name: a}]", "policy.yaml:1: idle_floor: idle floor -0.1: want a value in [0,1]"},
		{"bad half-life", "half_life: 7d\naccounts: [{name: a}]", `policy.yaml:1: half_life: "7d" is not a duration`},
		{"zero stale_after", "stale_after: 0s\naccounts: [{name: a}]", "policy.yaml:1: stale_after: 0s must be positive"},
		{"bad dampening", "dampening: 0.5\naccounts: [{name: a}]", "policy.yaml:1: dampening: 0.5: want a factor >= 1"},
		{"negative shares", "accounts: [{name: a, shares: -3}]", "policy.yaml:1: accounts[0].shares: shares -3 out of range"},
		{"word shares", "accounts:\n  - name: a\n    shares: lots", `policy.yaml:3: accounts[0].shares: shares "lots": want a non-negative integer or "parent"`},
		{"empty account name", "accounts: [{name: a}, {shares: 1}]", "policy.yaml:1: accounts[1]: account name: name is empty"},
		{"duplicate account", "accounts: [{name: a}, {name: b, accounts: [{name: a}]}]", `policy.yaml:1: accounts[1].accounts[0]: account "a" is defined twice`},
		{"root account", "accounts: [{name: root}]", `policy.yaml:1: accounts[0]: account name "root" is reserved`},
		{"duplicate user", "accounts: [{name: a, users: [{name: u}, {name: u}]}]", `policy.yaml:1: accounts[0].users[1]: user "u" appears twice in account "a"`},
		{"space in user", "accounts: [{name: a, users: [{name: 'j doe'}]}]", `policy.yaml:1: accounts[0].users[0]: user name: name "j doe" contains ' '`},
		{"two documents", "accounts: [{name: a}]\n---\naccounts: [{name: b}]", "policy.yaml:2: more than one YAML document"},
	}
	for _, tc := range tests {
		_, err := ParseConfig("policy.yaml", []byte(tc.yaml))
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%s: %v\n  want an error starting %q", tc.name, err, tc.want)
		}
	}
}

func TestLoadConfig(t *testing.T) {
	path := filepath.Join(t.TempDir(), "fairshare.yaml")
	if err := os.WriteFile(path, []byte(exampleConfig), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadConfig(path); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(t.TempDir(), "nope.yaml")
	if _, err := LoadConfig(missing); err == nil || !strings.Contains(err.Error(), missing) {
		t.Errorf("missing file: %v", err)
	}
}

// FuzzParseConfig: any input either parses into a configuration whose policy
// validates, whose tree computes factors in [0,1] and whose names are one
// printable word each, and which survives a round trip (written back as YAML
// and parsed again it is the same configuration); or it fails with an error
// that names the file and either the line (what the YAML parser refused) or
// the field. Nothing panics. Seeded with the configurations the repository
// ships and documents.
func FuzzParseConfig(f *testing.F) {
	for _, doc := range exampleConfigs(f) {
		f.Add([]byte(doc))
	}
	f.Add([]byte(exampleConfig))
	f.Add([]byte("accounts: [{name: a, shares: parent, users: [{name: u, shares: 0}]}]"))
	f.Add([]byte("accounts:\n  - name: a\n    accounts:\n      - name: b\n        accounts: [{name: c}]"))
	f.Add([]byte("charge: blend\nblend_weight: 0.3\naccounts: [{name: x}]"))
	f.Add([]byte("users: [{name: \"a\\u2028b\"}]"))
	f.Add([]byte("accounts: [{name: a, shares: [1]}]"))
	f.Add([]byte("half_life: 1e3h\naccounts: [{name: a}]"))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := ParseConfig("fuzz.yaml", data)
		if err != nil {
			checkConfigError(t, err)
			return
		}
		if err := c.Policy.Validate(); err != nil {
			t.Fatalf("accepted an invalid policy: %v", err)
		}
		if c.HalfLife <= 0 || c.StaleAfter <= 0 || !(c.Dampening >= 1) || c.Algorithm.validate() != nil {
			t.Fatalf("accepted settings %+v", c)
		}
		for _, n := range c.Tree.nodes {
			for _, r := range n.name {
				if unicode.IsSpace(r) || unicode.IsControl(r) || r == '/' {
					t.Fatalf("accepted name %q", n.name)
				}
			}
		}
		// Any accepted tree computes factors in [0,1].
		fs := ComputeFactors(c.Tree, nil, FactorOptions{Dampening: c.Dampening})
		for _, r := range fs.Rows[1:] {
			if !(r.ClassicFactor >= 0 && r.ClassicFactor <= 1) {
				t.Fatalf("%v: classic factor %v", r.Assoc, r.ClassicFactor)
			}
		}
		out := configYAML(t, c)
		again, err := ParseConfig("again.yaml", out)
		if err != nil {
			t.Fatalf("the configuration written back does not parse: %v\n%s", err, out)
		}
		if again.Algorithm != c.Algorithm || again.Policy != c.Policy || again.HalfLife != c.HalfLife ||
			again.StaleAfter != c.StaleAfter || again.Dampening != c.Dampening || !reflect.DeepEqual(again.Tree, c.Tree) {
			t.Fatalf("round trip changed the configuration:\n%s", out)
		}
	})
}

// checkConfigError: every error is a *yamlfile.Error naming the file, and
// its line unless it is about the file as a whole (empty, or aliasing yaml.v3
// refuses without one).
func checkConfigError(t *testing.T, err error) {
	t.Helper()
	errs := []error{err}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	}
	for _, e := range errs {
		var ye *yamlfile.Error
		if !errors.As(e, &ye) || ye.File != "fuzz.yaml" || !strings.HasPrefix(e.Error(), "fuzz.yaml") {
			t.Fatalf("error %q is not a yamlfile.Error naming the file", e)
		}
		if ye.Line == 0 && !containsAny(ye.Msg, "no accounts", "aliasing", "contains itself", "past the end") {
			t.Fatalf("error %q has no line", e)
		}
		if ye.Line > 0 && !strings.HasPrefix(e.Error(), fmt.Sprintf("fuzz.yaml:%d: ", ye.Line)) {
			t.Fatalf("error %q does not start with file:line", e)
		}
	}
}

func containsAny(s string, subs ...string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

// configYAML writes c as a configuration file.
func configYAML(t *testing.T, c *Config) []byte {
	t.Helper()
	type user struct {
		Name   string `yaml:"name"`
		Shares string `yaml:"shares"`
	}
	type account struct {
		Name     string    `yaml:"name"`
		Shares   string    `yaml:"shares"`
		Users    []user    `yaml:"users,omitempty"`
		Accounts []account `yaml:"accounts,omitempty"`
	}
	var walk func(i int) ([]user, []account)
	walk = func(i int) ([]user, []account) {
		var us []user
		var as []account
		for _, ch := range c.Tree.nodes[i].children {
			n := c.Tree.nodes[ch]
			if n.user {
				us = append(us, user{n.name, n.shares.String()})
				continue
			}
			a := account{Name: n.name, Shares: n.shares.String()}
			a.Users, a.Accounts = walk(ch)
			as = append(as, a)
		}
		return us, as
	}
	doc := map[string]any{
		"algorithm": string(c.Algorithm), "charge": string(c.Policy.Charge), "idle_floor": c.Policy.IdleFloor,
		"half_life": c.HalfLife.String(), "stale_after": c.StaleAfter.String(), "dampening": c.Dampening,
	}
	if c.Policy.Charge == ChargeBlend {
		doc["blend_weight"] = c.Policy.BlendWeight
	}
	us, as := walk(0)
	if len(us) > 0 {
		doc["users"] = us
	}
	if len(as) > 0 {
		doc["accounts"] = as
	}
	out, err := yaml.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// exampleConfigs are the configurations the repository ships and documents:
// the demo's and the one in docs/fairshare.md.
func exampleConfigs(f *testing.F) []string {
	f.Helper()
	demo, err := os.ReadFile("../../internal/demo/fairshare.yaml")
	if err != nil {
		f.Fatal(err)
	}
	out := []string{string(demo)}
	md, err := os.ReadFile("../../docs/fairshare.md")
	if err != nil {
		f.Fatal(err)
	}
	for _, b := range markdownBlocks(string(md), "yaml") {
		if strings.Contains(b, "accounts:") {
			out = append(out, b)
		}
	}
	if len(out) < 2 {
		f.Fatal("no fair-share configuration in docs/fairshare.md")
	}
	for _, doc := range out {
		if _, err := ParseConfig("example.yaml", []byte(doc)); err != nil {
			f.Errorf("an example configuration does not parse: %v\n%s", err, doc)
		}
	}
	return out
}

// markdownBlocks returns the fenced code blocks of md in language lang.
func markdownBlocks(md, lang string) []string {
	var out []string
	var b strings.Builder
	in := false
	for line := range strings.Lines(md) {
		switch {
		case !in && strings.TrimSpace(line) == "```"+lang:
			in = true
			b.Reset()
		case in && strings.TrimSpace(line) == "```":
			in = false
			out = append(out, b.String())
		case in:
			b.WriteString(line)
		}
	}
	return out
}
