package fairshare

import (
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/gpuwatch/gpuwatch/internal/yamlfile"
)

// Config is the fair-share section of gpuwatch's policy file:
//
//	algorithm: fair_tree      # or classic; default fair_tree (Slurm's default)
//	charge: measured          # allocation | measured | blend; default measured
//	blend_weight: 0.5         # w for blend: w*measured + (1-w)*allocation
//	idle_floor: 0.1           # least cost of an allocated GPU-second; default 0.1
//	half_life: 168h           # usage decay half-life; default 7 days (Slurm's)
//	stale_after: 5m           # ledger staleness bound; default 5m
//	dampening: 1              # classic FairShareDampeningFactor; default 1
//	users:                    # users directly under root (rare)
//	  - {name: ops, shares: 1}
//	accounts:
//	  - name: physics
//	    shares: 40            # integer >= 0 or "parent"; default 1
//	    users:
//	      - {name: alice, shares: 1}
//	      - {name: bob}
//	    accounts:
//	      - name: hep
//	        shares: 30
//	        users: [{name: carol}]
type Config struct {
	Algorithm Algorithm
	Policy    Policy
	HalfLife  time.Duration
	// StaleAfter is the ledger's staleness bound.
	StaleAfter time.Duration
	Dampening  float64
	Tree       *Tree
}

// LedgerOptions are the ledger settings of the configuration.
func (c *Config) LedgerOptions() LedgerOptions {
	return LedgerOptions{Policy: c.Policy, HalfLife: c.HalfLife, StaleAfter: c.StaleAfter}
}

type yamlConfig struct {
	Algorithm   *string        `yaml:"algorithm"`
	Charge      *string        `yaml:"charge"`
	BlendWeight *float64       `yaml:"blend_weight"`
	IdleFloor   *float64       `yaml:"idle_floor"`
	HalfLife    *time.Duration `yaml:"half_life"`
	StaleAfter  *time.Duration `yaml:"stale_after"`
	Dampening   *float64       `yaml:"dampening"`
	Users       []yamlUser     `yaml:"users"`
	Accounts    []yamlAccount  `yaml:"accounts"`
}

type yamlAccount struct {
	Name     string        `yaml:"name"`
	Shares   *Shares       `yaml:"shares"`
	Users    []yamlUser    `yaml:"users"`
	Accounts []yamlAccount `yaml:"accounts"`
}

type yamlUser struct {
	Name   string  `yaml:"name"`
	Shares *Shares `yaml:"shares"`
}

// maxConfigDepth bounds account nesting (Slurm trees are a few levels deep).
const maxConfigDepth = 64

// maxConfigFile bounds a configuration file.
const maxConfigFile = 16 << 20

// LoadConfig reads and validates a fair-share configuration file.
func LoadConfig(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("cannot read fair-share config: %w", err)
	}
	return ParseConfig(path, data)
}

// ParseConfig parses and validates a configuration (internal/yamlfile); every
// error reads "FILE:LINE: FIELD: problem" (name is the file).
func ParseConfig(name string, data []byte) (*Config, error) {
	doc, err := yamlfile.Parse(name, data, maxConfigFile)
	if err != nil {
		return nil, err
	}
	var y yamlConfig
	if err := doc.Decode(&y); err != nil {
		return nil, err
	}
	c := &Config{Algorithm: FairTree, Policy: Policy{Charge: ChargeMeasured, IdleFloor: DefaultIdleFloor},
		HalfLife: DefaultHalfLife, StaleAfter: DefaultStaleAfter, Dampening: 1}
	if y.Algorithm != nil {
		c.Algorithm = Algorithm(*y.Algorithm)
		if err := c.Algorithm.validate(); err != nil {
			doc.Errorf("algorithm", "%v", err)
		}
	}
	if y.Charge != nil {
		c.Policy.Charge = ChargePolicy(*y.Charge)
		if err := (Policy{Charge: c.Policy.Charge}).Validate(); err != nil {
			doc.Errorf("charge", "%v", err)
		}
	}
	if y.BlendWeight != nil {
		c.Policy.BlendWeight = *y.BlendWeight
		if err := (Policy{Charge: ChargeBlend, BlendWeight: *y.BlendWeight}).Validate(); err != nil {
			doc.Errorf("blend_weight", "%v", err)
		} else if c.Policy.Charge != ChargeBlend {
			doc.Errorf("blend_weight", "set but charge is %q: it applies only to charge: blend", c.Policy.Charge)
		}
	} else if c.Policy.Charge == ChargeBlend {
		doc.Errorf("charge", "blend needs blend_weight (0..1, the weight of measured usage)")
	}
	if y.IdleFloor != nil {
		c.Policy.IdleFloor = *y.IdleFloor
		if err := (Policy{Charge: ChargeMeasured, IdleFloor: *y.IdleFloor}).Validate(); err != nil {
			doc.Errorf("idle_floor", "%v", err)
		}
	}
	for _, d := range []struct {
		field string
		in    *time.Duration
		out   *time.Duration
	}{{"half_life", y.HalfLife, &c.HalfLife}, {"stale_after", y.StaleAfter, &c.StaleAfter}} {
		if d.in == nil {
			continue
		}
		if *d.in <= 0 {
			doc.Errorf(d.field, "%s must be positive", doc.Value(d.field))
			continue
		}
		*d.out = *d.in
	}
	if y.Dampening != nil {
		if !(*y.Dampening >= 1 && *y.Dampening <= 1e6) {
			doc.Errorf("dampening", "%v: want a factor >= 1 (Slurm's FairShareDampeningFactor)", *y.Dampening)
		}
		c.Dampening = *y.Dampening
	}
	if err := doc.Err(); err != nil {
		return nil, err
	}
	var spec TreeSpec
	spec.Users = convertUsers(y.Users)
	for i, a := range y.Accounts {
		as, err := convertAccount(a, fmt.Sprintf("accounts[%d]", i), 1)
		if err != nil {
			treeError(doc, err)
			return nil, doc.Err()
		}
		spec.Accounts = append(spec.Accounts, as)
	}
	if len(spec.Accounts) == 0 && len(spec.Users) == 0 {
		doc.Errorf("accounts", "no accounts: define at least one under accounts:")
		return nil, doc.Err()
	}
	t, err := NewTree(spec)
	if err != nil {
		treeError(doc, err)
		return nil, doc.Err()
	}
	c.Tree = t
	return c, nil
}

// treeError records an error of NewTree, which starts with the path of the
// account or user ("accounts[1].users[0]: …", "accounts[2] (account "x"): …"),
// at that path's line.
func treeError(doc *yamlfile.Doc, err error) {
	msg := err.Error()
	end := strings.IndexAny(msg, " :")
	if end <= 0 || !strings.HasPrefix(msg, "accounts[") && !strings.HasPrefix(msg, "users[") {
		doc.Errorf("", "%s", msg)
		return
	}
	path, rest := msg[:end], msg[end:]
	if inner, ok := strings.CutPrefix(rest, " ("); ok {
		if who, after, ok := strings.Cut(inner, "): "); ok {
			rest = who + ": " + after
		}
	}
	doc.Errorf(path, "%s", strings.TrimPrefix(rest, ": "))
}

func sharesOrDefault(s *Shares) Shares {
	if s == nil {
		return DefaultShares
	}
	return *s
}

func convertUsers(us []yamlUser) []UserSpec {
	out := make([]UserSpec, len(us))
	for i, u := range us {
		out[i] = UserSpec{Name: u.Name, Shares: sharesOrDefault(u.Shares)}
	}
	return out
}

func convertAccount(a yamlAccount, path string, depth int) (AccountSpec, error) {
	if depth > maxConfigDepth {
		return AccountSpec{}, fmt.Errorf("%s: accounts nest deeper than %d levels", path, maxConfigDepth)
	}
	out := AccountSpec{Name: a.Name, Shares: sharesOrDefault(a.Shares), Users: convertUsers(a.Users)}
	for i, c := range a.Accounts {
		cs, err := convertAccount(c, fmt.Sprintf("%s.accounts[%d]", path, i), depth+1)
		if err != nil {
			return AccountSpec{}, err
		}
		out.Accounts = append(out.Accounts, cs)
	}
	return out, nil
}
