package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/gpuwatch/gpuwatch/internal/auth"
	"github.com/gpuwatch/gpuwatch/internal/tlsconf"
)

// apiClient talks to a gpuwatch server's own API (/api/gpuwatch/v1/…).
type apiClient struct {
	base string
	http *http.Client
}

// clientFlags are the flags every command that calls the server shares:
// where it is, the token to send and the TLS files to trust it with.
type clientFlags struct {
	server    string
	tokenFile string
	tls       tlsconf.ClientFiles
}

func (f *clientFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.server, "server", "http://127.0.0.1:9402", "gpuwatch server (http:// or https://)")
	fs.StringVar(&f.tokenFile, "token-file", "", "file holding the bearer token to send (default: $"+auth.EnvToken+")")
	fs.StringVar(&f.tls.CAFile, "tls.ca-file", "", "CA certificates (PEM) that sign the server's certificate (default: the system's)")
	fs.StringVar(&f.tls.CertFile, "tls.cert-file", "", "client certificate (PEM) for a server that asks for mutual TLS")
	fs.StringVar(&f.tls.KeyFile, "tls.key-file", "", "key of --tls.cert-file")
}

// client builds the API client from the flags.
func (f *clientFlags) client() (*apiClient, error) {
	u, err := url.Parse(f.server)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("%w: --server %q: want the gpuwatch server's http://host:port", errUsage, f.server)
	}
	rt, err := clientTransport(f.tokenFile, f.tls, os.Getenv(auth.EnvToken))
	if err != nil {
		return nil, err
	}
	return &apiClient{base: strings.TrimRight(u.String(), "/") + "/api/gpuwatch/v1", http: &http.Client{Timeout: 30 * time.Second, Transport: rt}}, nil
}

// clientTransport is an HTTP transport that trusts the TLS files and sends
// the secret from tokenFile (else envSecret; neither: no Authorization).
func clientTransport(tokenFile string, files tlsconf.ClientFiles, envSecret string) (http.RoundTripper, error) {
	base := http.DefaultTransport.(*http.Transport).Clone()
	tc, err := tlsconf.Client(files)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errUsage, err)
	}
	if tc != nil {
		base.TLSClientConfig = tc
	}
	var secret auth.SecretSource
	switch {
	case tokenFile != "":
		if secret, err = auth.FileSecret(tokenFile); err != nil {
			return nil, fmt.Errorf("%w: --token-file: %v", errUsage, err)
		}
	case strings.TrimSpace(envSecret) != "":
		secret = auth.StaticSecret(strings.TrimSpace(envSecret))
	default:
		return base, nil
	}
	return &auth.Transport{Base: base, Secret: secret}, nil
}

// do sends a request with an optional JSON body and decodes the JSON answer
// into out; an error status becomes an error carrying the server's message.
func (c *apiClient) do(ctx context.Context, method, path string, body, out any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("gpuwatch server: %w", err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return fmt.Errorf("gpuwatch server: reading the answer: %w", err)
	}
	if resp.StatusCode/100 != 2 {
		var e struct {
			Error string `json:"error"`
		}
		if json.Unmarshal(data, &e) == nil && e.Error != "" {
			return fmt.Errorf("gpuwatch server %s %s: %s", method, path, e.Error)
		}
		return fmt.Errorf("gpuwatch server %s %s: %s: %s", method, path, resp.Status, strings.TrimSpace(string(data)))
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("gpuwatch server %s %s: answer is not the expected JSON: %w", method, path, err)
	}
	return nil
}
