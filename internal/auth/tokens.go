package auth

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"os"
	"path"
	"regexp"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/gpuwatch/gpuwatch/internal/yamlfile"
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
// Errors read "FILE:LINE: FIELD: problem" (internal/yamlfile), the field as
// "[2].role" (the third token's role). An empty list is an error: it would
// lock everyone out of every write, which is never what was meant.
func ParseTokens(file string, data []byte) (*Tokens, error) {
	doc, err := yamlfile.Parse(file, data, maxTokenFile)
	if err != nil {
		return nil, err
	}
	if doc.Empty() {
		doc.Errorf("", "empty: want a YAML list of tokens, each with name, role and sha256")
		return nil, doc.Err()
	}
	if root := doc.Root(); root.Kind == yaml.SequenceNode {
		// A secret where its hash belongs: say so, not just "unknown field".
		for i, item := range root.Content {
			for k := 0; item.Kind == yaml.MappingNode && k+1 < len(item.Content); k += 2 {
				if key := item.Content[k].Value; key == "secret" || key == "token" || key == "password" {
					doc.Errorf(fmt.Sprintf("[%d].%s", i, key), "the token file holds no secrets; give sha256 (the hex SHA-256 of the secret: `gpuwatch token`)")
				}
			}
		}
		if err := doc.Err(); err != nil {
			return nil, err
		}
	} else {
		doc.Errorf("", "want a YAML list of tokens, each with name, role and sha256")
		return nil, doc.Err()
	}
	var entries []tokenEntry
	if err := doc.Decode(&entries); err != nil {
		return nil, err
	}
	if len(entries) == 0 {
		doc.Errorf("", "no tokens: every write and control call would be refused; add at least one")
		return nil, doc.Err()
	}
	t := &Tokens{}
	names := map[string]int{}
	hashes := map[string]string{}
	cns := map[string]string{}
	for i, te := range entries {
		at := func(field string) string {
			if field == "" {
				return fmt.Sprintf("[%d]", i)
			}
			return fmt.Sprintf("[%d].%s", i, field)
		}
		before := doc.Len()
		e := Token{Name: strings.TrimSpace(te.Name), ClientCertCN: strings.TrimSpace(te.ClientCertCN), Nodes: te.Nodes}
		hash := strings.TrimSpace(te.SHA256)
		for j, g := range e.Nodes {
			if g == "" {
				doc.Errorf(fmt.Sprintf("%s[%d]", at("nodes"), j), "want a node name glob")
			} else if _, err := path.Match(g, ""); err != nil {
				doc.Errorf(fmt.Sprintf("%s[%d]", at("nodes"), j), "%q is not a valid glob: %v", g, err)
			}
		}
		if te.Role != nil {
			if e.Role, err = ParseRole(strings.TrimSpace(*te.Role)); err != nil {
				doc.Errorf(at("role"), "%v", err)
			}
		}
		switch {
		case e.Name == "":
			doc.Errorf(at("name"), "missing")
		case !tokenName.MatchString(e.Name):
			doc.Errorf(at("name"), "%q: use letters, digits and . _ @ : / - (at most 128)", e.Name)
		case te.Role == nil:
			doc.Errorf(at("role"), "missing (read, agent, operate or admin)")
		case hash == "" && e.ClientCertCN == "":
			doc.Errorf(at("sha256"), "missing (the hex SHA-256 of the secret; `gpuwatch token` makes one)")
		case hash != "" && e.ClientCertCN != "":
			doc.Errorf(at("client_cert_cn"), "give sha256 or client_cert_cn, not both")
		case hash != "" && !hexHash.MatchString(hash):
			doc.Errorf(at("sha256"), "want 64 hex digits (the SHA-256 of the secret, not the secret)")
		case len(e.Nodes) > 0 && e.Role != RoleAgent && doc.Len() == before:
			doc.Errorf(at("nodes"), "nodes bind an agent token; role %s is not bound to nodes", e.Role)
		}
		if doc.Len() > before {
			continue
		}
		if prev, ok := names[e.Name]; ok {
			doc.Errorf(at("name"), "%q is the name of token %d too; names identify callers in the audit log", e.Name, prev)
			continue
		}
		names[e.Name] = i + 1
		if hash != "" {
			hash = strings.ToLower(hash)
			if other, ok := hashes[hash]; ok {
				doc.Errorf(at("sha256"), "same secret as %q; give each caller its own", other)
				continue
			}
			hashes[hash] = e.Name
			b, _ := hex.DecodeString(hash)
			copy(e.hash[:], b)
			e.hasHash = true
		} else {
			if other, ok := cns[e.ClientCertCN]; ok {
				doc.Errorf(at("client_cert_cn"), "%q is %q's too", e.ClientCertCN, other)
				continue
			}
			cns[e.ClientCertCN] = e.Name
		}
		t.list = append(t.list, e)
	}
	if err := doc.Err(); err != nil {
		return nil, err
	}
	return t, nil
}

// tokenEntry is a token as written.
type tokenEntry struct {
	Name         string   `yaml:"name"`
	Role         *string  `yaml:"role"`
	SHA256       string   `yaml:"sha256"`
	ClientCertCN string   `yaml:"client_cert_cn"`
	Nodes        []string `yaml:"nodes"`
}

// maxTokenFile bounds a token file.
const maxTokenFile = 16 << 20

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
