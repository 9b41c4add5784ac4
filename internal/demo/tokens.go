package demo

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"github.com/gpuwatch/gpuwatch/internal/auth"
)

// demoTokens are the demo server's bearer tokens, made fresh each run as a
// site would make them with `gpuwatch token`: one agent token per node,
// bound to that node; an operator's, an admin's and a read-only one for
// Grafana. The server's token file holds their hashes; each secret is in its
// own file beside it, for the CLI (--token-file) and Grafana.
type demoTokens struct {
	file    string // the server's --auth.tokens file
	dir     string // <name>.token files
	secrets map[string]string
}

// Demo token names besides "agent-<node>".
const (
	tokenOperator = "operator"
	tokenAdmin    = "admin"
	tokenGrafana  = "grafana"
)

func agentToken(node string) string { return "agent-" + node }

func makeTokens(dir string, nodes []string) (*demoTokens, error) {
	t := &demoTokens{file: filepath.Join(dir, "tokens.yaml"), dir: filepath.Join(dir, "tokens"), secrets: map[string]string{}}
	if err := os.RemoveAll(t.dir); err != nil {
		return nil, fmt.Errorf("cannot clear the demo's token directory: %w", err)
	}
	if err := os.MkdirAll(t.dir, 0o700); err != nil {
		return nil, fmt.Errorf("cannot create the demo's token directory: %w", err)
	}
	var b strings.Builder
	b.WriteString("# The demo's tokens, made fresh each run; the secrets are in tokens/<name>.token.\n")
	add := func(name string, role auth.Role, node string) error {
		secret, err := auth.NewSecret()
		if err != nil {
			return err
		}
		t.secrets[name] = secret
		var nodes []string
		if node != "" {
			nodes = []string{node}
		}
		b.WriteString(auth.Entry(name, role, secret, nodes...))
		return os.WriteFile(t.path(name), []byte(secret+"\n"), 0o600)
	}
	for _, n := range nodes {
		if err := add(agentToken(n), auth.RoleAgent, n); err != nil {
			return nil, err
		}
	}
	for _, e := range []struct {
		name string
		role auth.Role
	}{{tokenOperator, auth.RoleOperate}, {tokenAdmin, auth.RoleAdmin}, {tokenGrafana, auth.RoleRead}} {
		if err := add(e.name, e.role, ""); err != nil {
			return nil, err
		}
	}
	if err := os.WriteFile(t.file, []byte(b.String()), 0o600); err != nil {
		return nil, fmt.Errorf("cannot write the demo's token file: %w", err)
	}
	return t, nil
}

// path is the file holding a token's secret.
func (t *demoTokens) path(name string) string { return filepath.Join(t.dir, name+".token") }

// transport sends the named token's secret.
func (t *demoTokens) transport(name string) http.RoundTripper {
	return &auth.Transport{Base: http.DefaultTransport, Secret: auth.StaticSecret(t.secrets[name])}
}
