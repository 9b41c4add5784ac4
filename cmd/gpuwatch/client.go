package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// apiClient talks to a gpuwatch server's own API (/api/gpuwatch/v1/…).
type apiClient struct {
	base string
	http *http.Client
}

func newAPIClient(server string) (*apiClient, error) {
	u, err := url.Parse(server)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("%w: --server %q: want the gpuwatch server's http://host:port", errUsage, server)
	}
	return &apiClient{base: strings.TrimRight(u.String(), "/") + "/api/gpuwatch/v1", http: &http.Client{Timeout: 30 * time.Second}}, nil
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
