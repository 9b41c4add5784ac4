// Package tlsconf builds the TLS configurations of gpuwatch's listeners and
// clients from PEM files: a server certificate and key (and, for mutual TLS,
// the CA that signs client certificates), reloaded when the files change so
// that a renewed certificate is served without a restart; and a client
// configuration that trusts a given CA and may present a client certificate.
package tlsconf

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"
)

// checkEvery bounds how often the files are stat'ed.
const checkEvery = time.Second

// ServerFiles name a listener's certificate files.
type ServerFiles struct {
	CertFile, KeyFile string
	// ClientCAFile, when set, turns on mutual TLS: client certificates are
	// verified against these CAs.
	ClientCAFile string
	// ClientAuth with ClientCAFile: "require" (default: every client presents a
	// certificate) or "verify-if-given" (bearer-token clients without one are
	// let through to the token check; presented certificates are verified).
	ClientAuth string
}

// Enabled says whether TLS was asked for.
func (f ServerFiles) Enabled() bool {
	return f.CertFile != "" || f.KeyFile != "" || f.ClientCAFile != ""
}

// Server returns a TLS configuration that serves the certificate from the
// files, reading them again when they change (at most once a second). A
// change that does not load keeps the certificate in force and is logged.
func Server(f ServerFiles, log *slog.Logger) (*tls.Config, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if f.CertFile == "" || f.KeyFile == "" {
		return nil, errors.New("TLS needs both --tls.cert-file and --tls.key-file")
	}
	r := &reloader{files: f, log: log}
	if err := r.load(); err != nil {
		return nil, err
	}
	var auth tls.ClientAuthType
	switch f.ClientAuth {
	case "", "require":
		auth = tls.RequireAndVerifyClientCert
	case "verify-if-given":
		auth = tls.VerifyClientCertIfGiven
	default:
		return nil, fmt.Errorf("--tls.client-auth %q: want require or verify-if-given", f.ClientAuth)
	}
	base := &tls.Config{MinVersion: tls.VersionTLS12, NextProtos: []string{"h2", "http/1.1"}}
	base.GetCertificate = func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
		c, _ := r.current()
		return c, nil
	}
	if f.ClientCAFile != "" {
		base.GetConfigForClient = func(*tls.ClientHelloInfo) (*tls.Config, error) {
			_, pool := r.current()
			c := base.Clone()
			c.GetConfigForClient = nil
			c.ClientAuth = auth
			c.ClientCAs = pool
			return c, nil
		}
	}
	return base, nil
}

type reloader struct {
	files ServerFiles
	log   *slog.Logger

	mu      sync.Mutex
	cert    *tls.Certificate
	pool    *x509.CertPool
	stamp   string
	checked time.Time
	bad     string
}

func (r *reloader) stampNow() string {
	s := ""
	for _, p := range []string{r.files.CertFile, r.files.KeyFile, r.files.ClientCAFile} {
		if p == "" {
			continue
		}
		if st, err := os.Stat(p); err == nil {
			s += fmt.Sprintf("%s:%d:%d;", p, st.ModTime().UnixNano(), st.Size())
		} else {
			s += p + ":missing;"
		}
	}
	return s
}

func (r *reloader) load() error {
	stamp := r.stampNow()
	cert, err := tls.LoadX509KeyPair(r.files.CertFile, r.files.KeyFile)
	if err != nil {
		return fmt.Errorf("cannot load the TLS certificate (--tls.cert-file %s, --tls.key-file %s): %w", r.files.CertFile, r.files.KeyFile, err)
	}
	var pool *x509.CertPool
	if r.files.ClientCAFile != "" {
		if pool, err = LoadPool(r.files.ClientCAFile); err != nil {
			return fmt.Errorf("--tls.client-ca-file: %w", err)
		}
	}
	r.cert, r.pool, r.stamp = &cert, pool, stamp
	return nil
}

func (r *reloader) current() (*tls.Certificate, *x509.CertPool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if time.Since(r.checked) >= checkEvery {
		r.checked = time.Now()
		if s := r.stampNow(); s != r.stamp && s != r.bad {
			if err := r.load(); err != nil {
				r.bad = s
				r.log.Error("the TLS files changed but do not load; the certificate loaded before stays in force", "err", err)
			} else {
				r.bad = ""
				r.log.Info("TLS certificate reloaded", "cert_file", r.files.CertFile)
			}
		}
	}
	return r.cert, r.pool
}

// LoadPool reads PEM certificates into a pool.
func LoadPool(file string) (*x509.CertPool, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(data) {
		return nil, fmt.Errorf("%s holds no PEM certificate", file)
	}
	return pool, nil
}

// ClientFiles name a client's TLS files.
type ClientFiles struct {
	// CAFile: the CAs that sign the server's certificate (default: the
	// system's).
	CAFile string
	// CertFile and KeyFile: a client certificate for mutual TLS.
	CertFile, KeyFile string
}

// Client returns the client configuration, nil when no file is given (the
// system's roots then verify https:// servers).
func Client(f ClientFiles) (*tls.Config, error) {
	if f.CAFile == "" && f.CertFile == "" && f.KeyFile == "" {
		return nil, nil
	}
	c := &tls.Config{MinVersion: tls.VersionTLS12}
	if f.CAFile != "" {
		pool, err := LoadPool(f.CAFile)
		if err != nil {
			return nil, fmt.Errorf("--tls.ca-file: %w", err)
		}
		c.RootCAs = pool
	}
	if f.CertFile != "" || f.KeyFile != "" {
		if f.CertFile == "" || f.KeyFile == "" {
			return nil, errors.New("a client certificate needs both its certificate and its key file")
		}
		cert, err := tls.LoadX509KeyPair(f.CertFile, f.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("cannot load the client certificate: %w", err)
		}
		c.Certificates = []tls.Certificate{cert}
	}
	return c, nil
}
