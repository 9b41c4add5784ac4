package auth

import (
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"
)

// EnvToken is the environment variable the CLI reads a secret from when no
// --token-file is given.
const EnvToken = "GPUWATCH_TOKEN"

// ReadSecretFile reads a secret from a file (surrounding white space, such as
// the final newline, is not part of it).
func ReadSecretFile(path string) (string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("cannot read the token file: %w", err)
	}
	s := strings.TrimSpace(string(data))
	if s == "" {
		return "", fmt.Errorf("token file %s is empty", path)
	}
	if strings.ContainsAny(s, "\r\n") {
		return "", fmt.Errorf("token file %s holds more than one line; it should hold the secret only", path)
	}
	return s, nil
}

// SecretSource gives the secret to send; it may change over time.
type SecretSource func() (string, error)

// StaticSecret always gives s.
func StaticSecret(s string) SecretSource { return func() (string, error) { return s, nil } }

// FileSecret reads the secret from path, again when the file changes
// (checked at most once a second), so a rotated secret is picked up without
// a restart.
func FileSecret(path string) (SecretSource, error) {
	s, err := ReadSecretFile(path)
	if err != nil {
		return nil, err
	}
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	var mu sync.Mutex
	mod, checked := st.ModTime(), time.Now()
	return func() (string, error) {
		mu.Lock()
		defer mu.Unlock()
		if time.Since(checked) < checkEvery {
			return s, nil
		}
		checked = time.Now()
		st, err := os.Stat(path)
		if err != nil || st.ModTime().Equal(mod) {
			return s, nil
		}
		if ns, err := ReadSecretFile(path); err == nil {
			s, mod = ns, st.ModTime()
		}
		return s, nil
	}, nil
}

// Transport sends every request through Base (nil: http.DefaultTransport)
// with "Authorization: Bearer <secret>".
type Transport struct {
	Base   http.RoundTripper
	Secret SecretSource
}

// RoundTrip implements http.RoundTripper.
func (t *Transport) RoundTrip(r *http.Request) (*http.Response, error) {
	base := t.Base
	if base == nil {
		base = http.DefaultTransport
	}
	if t.Secret == nil {
		return base.RoundTrip(r)
	}
	s, err := t.Secret()
	if err != nil {
		if r.Body != nil {
			r.Body.Close()
		}
		return nil, err
	}
	if s == "" {
		return nil, errors.New("empty bearer token")
	}
	r2 := r.Clone(r.Context())
	r2.Header.Set("Authorization", "Bearer "+s)
	return base.RoundTrip(r2)
}
