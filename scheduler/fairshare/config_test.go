package fairshare

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
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
		{"empty", "", "no accounts"},
		{"unknown field", "acounts: []", "field acounts not found"},
		{"bad algorithm", "algorithm: fifo\naccounts: [{name: a}]", `algorithm: algorithm "fifo"`},
		{"bad charge", "charge: free\naccounts: [{name: a}]", `charge "free"`},
		{"blend without weight", "charge: blend\naccounts: [{name: a}]", "needs blend_weight"},
		{"weight without blend", "blend_weight: 0.5\naccounts: [{name: a}]", "applies only to charge: blend"},
		{"weight out of range", "charge: blend\nblend_weight: 2\naccounts: [{name: a}]", "blend weight 2"},
		{"floor out of range", "idle_floor: -0.1\naccounts: [{name: a}]", "idle floor -0.1"},
		{"bad half-life", "half_life: 7d\naccounts: [{name: a}]", "half_life: "},
		{"zero stale_after", "stale_after: 0s\naccounts: [{name: a}]", "stale_after 0s: must be positive"},
		{"bad dampening", "dampening: 0.5\naccounts: [{name: a}]", "dampening 0.5"},
		{"negative shares", "accounts: [{name: a, shares: -3}]", "line 1: shares -3 out of range"},
		{"word shares", "accounts:\n  - name: a\n    shares: lots", `line 3: shares "lots"`},
		{"empty account name", "accounts: [{name: a}, {shares: 1}]", "accounts[1]: account name: name is empty"},
		{"duplicate account", "accounts: [{name: a}, {name: b, accounts: [{name: a}]}]", `accounts[1].accounts[0]: account "a" is defined twice`},
		{"root account", "accounts: [{name: root}]", "reserved"},
		{"duplicate user", "accounts: [{name: a, users: [{name: u}, {name: u}]}]", `accounts[0].users[1]: user "u" appears twice in account "a"`},
		{"space in user", "accounts: [{name: a, users: [{name: 'j doe'}]}]", `accounts[0].users[0]: user name: name "j doe" contains ' '`},
		{"two documents", "accounts: [{name: a}]\n---\naccounts: [{name: b}]", "more than one YAML document"},
	}
	for _, tc := range tests {
		_, err := ParseConfig("policy.yaml", []byte(tc.yaml))
		if err == nil || !strings.HasPrefix(err.Error(), "fair-share config policy.yaml: ") || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v\n  want an error naming policy.yaml and containing %q", tc.name, err, tc.want)
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

func FuzzParseConfig(f *testing.F) {
	f.Add([]byte(exampleConfig))
	f.Add([]byte("accounts: [{name: a, shares: parent, users: [{name: u, shares: 0}]}]"))
	f.Add([]byte("accounts:\n  - name: a\n    accounts:\n      - name: b\n        accounts: [{name: c}]"))
	f.Add([]byte("charge: blend\nblend_weight: 0.3\naccounts: [{name: x}]"))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := ParseConfig("fuzz.yaml", data)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "fair-share config fuzz.yaml: ") {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		if err := c.Policy.Validate(); err != nil {
			t.Fatalf("accepted an invalid policy: %v", err)
		}
		// Any accepted tree computes factors in [0,1].
		fs := ComputeFactors(c.Tree, nil, FactorOptions{Dampening: c.Dampening})
		for _, r := range fs.Rows[1:] {
			if !(r.ClassicFactor >= 0 && r.ClassicFactor <= 1) {
				t.Fatalf("%v: classic factor %v", r.Assoc, r.ClassicFactor)
			}
		}
	})
}
