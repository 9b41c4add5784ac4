package main

import (
	"flag"
	"fmt"
	"log/slog"

	"github.com/gpuwatch/gpuwatch/internal/auth"
	"github.com/gpuwatch/gpuwatch/internal/serve"
	"github.com/gpuwatch/gpuwatch/internal/tlsconf"
)

// securityFlags are a listener's front door (tokens) and bounds (TLS,
// connections, requests in flight); `server` and `agent` share them.
type securityFlags struct {
	tokens      string
	insecure    bool
	tls         tlsconf.ServerFiles
	maxInFlight int
	maxConns    int
}

func (f *securityFlags) register(fs *flag.FlagSet, server bool) {
	what := "write and control calls"
	if !server {
		what = "/debug/pprof"
	}
	fs.StringVar(&f.tokens, "auth.tokens", "", "token file (YAML list of name, role, sha256[, nodes]; `gpuwatch token` makes entries): every request but /healthz needs a token with the role its endpoint needs (default: no tokens; reads are open, "+what+" are accepted from loopback only)")
	fs.BoolVar(&f.insecure, "auth.insecure", false, "accept every call from anywhere without a token (only on a network you trust)")
	fs.StringVar(&f.tls.CertFile, "tls.cert-file", "", "serve HTTPS with this certificate (PEM; reloaded when it changes)")
	fs.StringVar(&f.tls.KeyFile, "tls.key-file", "", "key of --tls.cert-file (PEM)")
	fs.StringVar(&f.tls.ClientCAFile, "tls.client-ca-file", "", "mutual TLS: verify client certificates against these CAs (PEM; reloaded when it changes)")
	fs.StringVar(&f.tls.ClientAuth, "tls.client-auth", "require", "with --tls.client-ca-file: require (every client presents a certificate) or verify-if-given (clients with a bearer token need none)")
	fs.IntVar(&f.maxInFlight, "http.max-in-flight", 256, "most requests served at once; more wait up to 1 s, then get 503")
	fs.IntVar(&f.maxConns, "http.max-connections", 4096, "most open connections; more wait to be accepted")
}

func (f *securityFlags) options(log *slog.Logger) (auth.Options, serve.Options, error) {
	var a auth.Options
	var l serve.Options
	if f.insecure && f.tokens != "" {
		return a, l, fmt.Errorf("%w: --auth.insecure and --auth.tokens contradict each other; give one", errUsage)
	}
	a.Insecure = f.insecure
	if f.tokens != "" {
		tf, err := auth.OpenTokenFile(f.tokens, log.With("component", "auth"))
		if err != nil {
			return a, l, fmt.Errorf("--auth.tokens: %w", err)
		}
		a.Tokens = tf
	}
	if f.tls.Enabled() {
		tc, err := tlsconf.Server(f.tls, log.With("component", "tls"))
		if err != nil {
			return a, l, fmt.Errorf("%w: %v", errUsage, err)
		}
		l.TLS = tc
	}
	if f.maxInFlight <= 0 || f.maxConns <= 0 {
		return a, l, fmt.Errorf("%w: --http.max-in-flight and --http.max-connections must be positive", errUsage)
	}
	l.MaxInFlight, l.MaxConns = f.maxInFlight, f.maxConns
	return a, l, nil
}
