package auth

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"regexp"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// Role is what a caller may do. Each role includes the ones before it.
type Role int

const (
	// RoleNone is needed by nothing but the liveness probe.
	RoleNone Role = iota
	// RoleRead: the query API, the UI pages, every GET endpoint, the
	// kube-scheduler extender (it only reads).
	RoleRead
	// RoleAgent: remote write, import and health push (for its own nodes
	// when the token is bound to some).
	RoleAgent
	// RoleOperate: drain, resume, place and release.
	RoleOperate
	// RoleAdmin: budget reset, policy reload, the store's admin API, anything
	// not listed above.
	RoleAdmin
)

var roleNames = [...]string{RoleNone: "none", RoleRead: "read", RoleAgent: "agent", RoleOperate: "operate", RoleAdmin: "admin"}

func (r Role) String() string {
	if r < 0 || int(r) >= len(roleNames) {
		return fmt.Sprintf("role(%d)", int(r))
	}
	return roleNames[r]
}

// ParseRole reads a role's name.
func ParseRole(s string) (Role, error) {
	for r, n := range roleNames {
		if n == s && Role(r) != RoleNone {
			return Role(r), nil
		}
	}
	return RoleNone, fmt.Errorf("role %q: want read, agent, operate or admin", s)
}

// Token is one entry of the token file. The file holds the SHA-256 of each
// secret, never the secret.
type Token struct {
	// Name identifies the caller in the audit log, logs and metrics.
	Name string
	Role Role
	// Nodes, when set, bind an agent token to the nodes whose names match one
	// of these globs (path.Match syntax: "node-0*", "gpu[0-3]?").
	Nodes []string
	// ClientCertCN, instead of a secret, names a client whose verified TLS
	// certificate (mutual TLS) carries this common name, for callers that
	// cannot send a bearer token (the kube-scheduler's extender client).
	ClientCertCN string

	hash [sha256.Size]byte
	// hasHash is false for a certificate-only entry.
	hasHash bool
}

// Tokens is a loaded token file.
type Tokens struct {
	list []Token
}

// Len is the number of entries.
func (t *Tokens) Len() int { return len(t.list) }

// Identity is an authenticated caller.
type Identity struct {
	// Name is the token's name ("loopback" for an unauthenticated local call
	// without a token file, "anonymous" under --auth.insecure).
	Name  string
	Role  Role
	Nodes []string
	// Session is set when the caller came with a browser session cookie
	// (the web UI's login) rather than a bearer token or certificate.
	Session bool
	// ambient: the caller is let in for where it calls from (loopback
	// without a token file, or --auth.insecure), not for what it sent.
	ambient bool
}

// AllowsNode says whether the identity may speak for node: true unless the
// identity is bound to nodes none of which matches.
func (id *Identity) AllowsNode(node string) bool {
	if id == nil {
		return false
	}
	if len(id.Nodes) == 0 {
		return true
	}
	for _, g := range id.Nodes {
		if ok, _ := path.Match(g, node); ok {
			return true
		}
	}
	return false
}

// HashSecret is the hex SHA-256 of a secret, as the token file holds it.
func HashSecret(secret string) string {
	h := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(h[:])
}

// Lookup finds the entry whose hash is the secret's. It compares the hash
// against every entry in constant time and does not stop at a match, so the
// time taken says nothing about which entry, or how much of one, matched.
func (t *Tokens) Lookup(secret string) (*Identity, bool) {
	if t == nil || secret == "" {
		return nil, false
	}
	h := sha256.Sum256([]byte(secret))
	found := -1
	for i := range t.list {
		match := subtle.ConstantTimeCompare(h[:], t.list[i].hash[:])
		has := 0
		if t.list[i].hasHash {
			has = 1
		}
		if match&has == 1 {
			found = i
		}
	}
	if found < 0 {
		return nil, false
	}
	e := &t.list[found]
	return &Identity{Name: e.Name, Role: e.Role, Nodes: e.Nodes}, true
}

// lookupHash finds the entry holding a secret's SHA-256 (a session's
// token), in constant time per entry as Lookup does.
func (t *Tokens) lookupHash(h [sha256.Size]byte) (*Identity, bool) {
	if t == nil {
		return nil, false
	}
	found := -1
	for i := range t.list {
		if subtle.ConstantTimeCompare(h[:], t.list[i].hash[:]) == 1 && t.list[i].hasHash {
			found = i
		}
	}
	if found < 0 {
		return nil, false
	}
	e := &t.list[found]
	return &Identity{Name: e.Name, Role: e.Role, Nodes: e.Nodes}, true
}

// LookupCert finds the certificate-only entry for a verified client
// certificate's common name.
func (t *Tokens) LookupCert(cn string) (*Identity, bool) {
	if t == nil || cn == "" {
		return nil, false
	}
	for i := range t.list {
		if e := &t.list[i]; e.ClientCertCN == cn {
			return &Identity{Name: e.Name, Role: e.Role, Nodes: e.Nodes}, true
		}
	}
	return nil, false
}

// LoadTokens reads a token file.
func LoadTokens(file string) (*Tokens, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("cannot read the token file: %w", err)
	}
	return ParseTokens(file, data)
}

var (
	tokenName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._@:/-]{0,127}$`)
	hexHash   = regexp.MustCompile(`^[0-9a-fA-F]{64}$`)
)

// ParseTokens parses a token file: a YAML list of entries
//
//   - name: agent-rack1        # required, unique; the audit log's actor
//     role: agent              # read, agent, operate or admin
//     sha256: 9f86d08…         # hex SHA-256 of the secret (`gpuwatch token` makes one)
//     nodes: ["node-0*"]       # optional: an agent token speaks only for these nodes
//   - name: kube-scheduler
//     role: read
//     client_cert_cn: kube-scheduler   # instead of sha256: a mutual-TLS client
//
// Errors read "FILE:LINE: FIELD: problem". An empty list is an error: it
// would lock everyone out of every write, which is never what was meant.
func ParseTokens(file string, data []byte) (*Tokens, error) {
	fail := func(line int, format string, args ...any) (*Tokens, error) {
		if line > 0 {
			return nil, fmt.Errorf("token file %s:%d: %s", file, line, fmt.Sprintf(format, args...))
		}
		return nil, fmt.Errorf("token file %s: %s", file, fmt.Sprintf(format, args...))
	}
	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return fail(0, "empty: want a YAML list of tokens, each with name, role and sha256")
		}
		return fail(0, "%v", err)
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		return fail(extra.Line, "more than one YAML document")
	}
	root := &doc
	if root.Kind == yaml.DocumentNode && len(root.Content) == 1 {
		root = root.Content[0]
	}
	if root.Kind != yaml.SequenceNode {
		return fail(root.Line, "want a YAML list of tokens, each with name, role and sha256")
	}
	if len(root.Content) == 0 {
		return fail(root.Line, "no tokens: every write and control call would be refused; add at least one")
	}
	t := &Tokens{}
	names := map[string]int{}
	hashes := map[string]string{}
	cns := map[string]string{}
	for i, item := range root.Content {
		if item.Kind != yaml.MappingNode {
			return fail(item.Line, "token %d: want a mapping with name, role and sha256", i+1)
		}
		var e Token
		var hash string
		var roleLine int
		seen := map[string]bool{}
		for k := 0; k+1 < len(item.Content); k += 2 {
			key, val := item.Content[k], item.Content[k+1]
			if seen[key.Value] {
				return fail(key.Line, "%s: given twice", key.Value)
			}
			seen[key.Value] = true
			scalar := func() (string, error) {
				if val.Kind != yaml.ScalarNode {
					return "", fmt.Errorf("want a string")
				}
				return strings.TrimSpace(val.Value), nil
			}
			var err error
			switch key.Value {
			case "name":
				e.Name, err = scalar()
			case "role":
				var s string
				if s, err = scalar(); err == nil {
					e.Role, err = ParseRole(s)
				}
				roleLine = val.Line
			case "sha256":
				hash, err = scalar()
			case "client_cert_cn":
				e.ClientCertCN, err = scalar()
			case "nodes":
				if val.Kind != yaml.SequenceNode {
					err = fmt.Errorf("want a list of node name globs")
					break
				}
				for _, g := range val.Content {
					if g.Kind != yaml.ScalarNode || g.Value == "" {
						return fail(g.Line, "nodes: want a node name glob")
					}
					if _, err := path.Match(g.Value, ""); err != nil {
						return fail(g.Line, "nodes: %q is not a valid glob: %v", g.Value, err)
					}
					e.Nodes = append(e.Nodes, g.Value)
				}
			case "secret", "token", "password":
				return fail(key.Line, "%s: the token file holds no secrets; give sha256 (the hex SHA-256 of the secret: `gpuwatch token`)", key.Value)
			default:
				return fail(key.Line, "%s: unknown field (want name, role, sha256, client_cert_cn, nodes)", key.Value)
			}
			if err != nil {
				return fail(val.Line, "%s: %v", key.Value, err)
			}
		}
		switch {
		case e.Name == "":
			return fail(item.Line, "token %d: name is missing", i+1)
		case !tokenName.MatchString(e.Name):
			return fail(item.Line, "name %q: use letters, digits and . _ @ : / - (at most 128)", e.Name)
		case !seen["role"]:
			return fail(item.Line, "token %q: role is missing (read, agent, operate or admin)", e.Name)
		case hash == "" && e.ClientCertCN == "":
			return fail(item.Line, "token %q: sha256 is missing (the hex SHA-256 of the secret; `gpuwatch token` makes one)", e.Name)
		case hash != "" && e.ClientCertCN != "":
			return fail(item.Line, "token %q: give sha256 or client_cert_cn, not both", e.Name)
		case hash != "" && !hexHash.MatchString(hash):
			return fail(item.Line, "token %q: sha256: want 64 hex digits (the SHA-256 of the secret, not the secret)", e.Name)
		case len(e.Nodes) > 0 && e.Role != RoleAgent:
			return fail(roleLine, "token %q: nodes bind an agent token; role %s is not bound to nodes", e.Name, e.Role)
		}
		if prev, ok := names[e.Name]; ok {
			return fail(item.Line, "token %q: the name is used by token %d too; names identify callers in the audit log", e.Name, prev)
		}
		names[e.Name] = i + 1
		if hash != "" {
			hash = strings.ToLower(hash)
			if other, ok := hashes[hash]; ok {
				return fail(item.Line, "token %q: same secret as %q; give each caller its own", e.Name, other)
			}
			hashes[hash] = e.Name
			b, _ := hex.DecodeString(hash)
			copy(e.hash[:], b)
			e.hasHash = true
		} else {
			if other, ok := cns[e.ClientCertCN]; ok {
				return fail(item.Line, "token %q: client_cert_cn %q is %q's too", e.Name, e.ClientCertCN, other)
			}
			cns[e.ClientCertCN] = e.Name
		}
		t.list = append(t.list, e)
	}
	return t, nil
}

// NewSecret makes a random secret: 32 bytes from crypto/rand, "gpw_" and
// base64url, so a leaked one is easy to recognise.
func NewSecret() (string, error) {
	raw := make([]byte, 32)
	if _, err := rand.Read(raw); err != nil {
		return "", err
	}
	return "gpw_" + base64.RawURLEncoding.EncodeToString(raw), nil
}

// Entry is a token file entry for a secret: its name, role, the secret's
// SHA-256 and, for an agent token, the node globs it is bound to.
func Entry(name string, role Role, secret string, nodes ...string) string {
	e := fmt.Sprintf("- name: %s\n  role: %s\n  sha256: %s\n", name, role, HashSecret(secret))
	if len(nodes) > 0 {
		q := make([]string, len(nodes))
		for i, n := range nodes {
			q[i] = strconv.Quote(n)
		}
		e += "  nodes: [" + strings.Join(q, ", ") + "]\n"
	}
	return e
}
