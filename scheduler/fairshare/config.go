package fairshare

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"gopkg.in/yaml.v3"
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
	Algorithm   *string       `yaml:"algorithm"`
	Charge      *string       `yaml:"charge"`
	BlendWeight *float64      `yaml:"blend_weight"`
	IdleFloor   *float64      `yaml:"idle_floor"`
	HalfLife    *string       `yaml:"half_life"`
	StaleAfter  *string       `yaml:"stale_after"`
	Dampening   *float64      `yaml:"dampening"`
	Users       []yamlUser    `yaml:"users"`
	Accounts    []yamlAccount `yaml:"accounts"`
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

// LoadConfig reads and validates a fair-share configuration file.
func LoadConfig(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("cannot read fair-share config: %w", err)
	}
	return ParseConfig(path, data)
}

// ParseConfig parses and validates a configuration; name (the file) starts
// every error, followed by the path of the bad field and the problem.
func ParseConfig(name string, data []byte) (*Config, error) {
	fail := func(format string, args ...any) (*Config, error) {
		return nil, fmt.Errorf("fair-share config %s: %s", name, fmt.Sprintf(format, args...))
	}
	var y yamlConfig
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&y); err != nil && !errors.Is(err, io.EOF) {
		return fail("%v", err)
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		return fail("more than one YAML document")
	}
	c := &Config{Algorithm: FairTree, Policy: Policy{Charge: ChargeMeasured, IdleFloor: DefaultIdleFloor},
		HalfLife: DefaultHalfLife, StaleAfter: DefaultStaleAfter, Dampening: 1}
	if y.Algorithm != nil {
		c.Algorithm = Algorithm(*y.Algorithm)
		if err := c.Algorithm.validate(); err != nil {
			return fail("algorithm: %v", err)
		}
	}
	if y.Charge != nil {
		c.Policy.Charge = ChargePolicy(*y.Charge)
	}
	if y.BlendWeight != nil {
		if c.Policy.Charge != ChargeBlend {
			return fail("blend_weight is set but charge is %q: it applies only to charge: blend", c.Policy.Charge)
		}
		c.Policy.BlendWeight = *y.BlendWeight
	} else if c.Policy.Charge == ChargeBlend {
		return fail("charge: blend needs blend_weight (0..1, the weight of measured usage)")
	}
	if y.IdleFloor != nil {
		c.Policy.IdleFloor = *y.IdleFloor
	}
	if err := c.Policy.Validate(); err != nil {
		return fail("%v", err)
	}
	for _, d := range []struct {
		field string
		in    *string
		out   *time.Duration
	}{{"half_life", y.HalfLife, &c.HalfLife}, {"stale_after", y.StaleAfter, &c.StaleAfter}} {
		if d.in == nil {
			continue
		}
		v, err := time.ParseDuration(*d.in)
		if err != nil {
			return fail("%s: %v (write e.g. 168h or 5m)", d.field, err)
		}
		if v <= 0 {
			return fail("%s %s: must be positive", d.field, v)
		}
		*d.out = v
	}
	if y.Dampening != nil {
		if !(*y.Dampening >= 1 && *y.Dampening <= 1e6) {
			return fail("dampening %v: want a factor >= 1 (Slurm's FairShareDampeningFactor)", *y.Dampening)
		}
		c.Dampening = *y.Dampening
	}
	var spec TreeSpec
	spec.Users = convertUsers(y.Users)
	for i, a := range y.Accounts {
		as, err := convertAccount(a, fmt.Sprintf("accounts[%d]", i), 1)
		if err != nil {
			return fail("%v", err)
		}
		spec.Accounts = append(spec.Accounts, as)
	}
	if len(spec.Accounts) == 0 && len(spec.Users) == 0 {
		return fail("no accounts: define at least one under accounts:")
	}
	t, err := NewTree(spec)
	if err != nil {
		return fail("%v", err)
	}
	c.Tree = t
	return c, nil
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
