package datasource

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
)

// APIPrefix is where the server's control-plane API lives
// (internal/server.APIPrefix, which the plugin does not import: it would
// link the whole server).
const APIPrefix = "/api/gpuwatch/v1"

// maxAnswerBytes bounds what one answer may hold (a week's report of a large
// fleet by job is a few MiB).
const maxAnswerBytes = 256 << 20

// client calls one gpuwatch server.
type client struct {
	base  string
	token string
	http  *http.Client
}

// callError is a call that did not get its answer: the status Grafana shows,
// whose fault it is, and a message for the panel.
type callError struct {
	status backend.Status
	source backend.ErrorSource
	msg    string
}

func (e *callError) Error() string { return e.msg }

// get calls GET path (under the server's root, query included) and decodes
// the 200 answer's JSON into out.
func (c *client) get(ctx context.Context, path string, out any) error {
	body, err := c.getRaw(ctx, path)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(body, out); err != nil {
		return &callError{backend.StatusBadGateway, backend.ErrorSourceDownstream,
			fmt.Sprintf("cannot decode the gpuwatch server's answer to %s (is %s a gpuwatch server?): %v", pathOnly(path), c.base, err)}
	}
	return nil
}

// getRaw calls GET path and returns the 200 answer's body.
func (c *client) getRaw(ctx context.Context, path string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+path, nil)
	if err != nil {
		return nil, &callError{backend.StatusBadRequest, backend.ErrorSourcePlugin, fmt.Sprintf("cannot build the request for %s: %v", pathOnly(path), err)}
	}
	req.Header.Set("Accept", "application/json")
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		status := backend.StatusBadGateway
		if errors.Is(err, context.DeadlineExceeded) || isTimeout(err) {
			status = backend.StatusTimeout
		}
		return nil, &callError{status, backend.ErrorSourceDownstream,
			fmt.Sprintf("the gpuwatch server at %s does not answer: %v", c.base, stripURL(err))}
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswerBytes+1))
	if err != nil {
		return nil, &callError{backend.StatusBadGateway, backend.ErrorSourceDownstream,
			fmt.Sprintf("cannot read the gpuwatch server's answer to %s: %v", pathOnly(path), err)}
	}
	if len(body) > maxAnswerBytes {
		return nil, &callError{backend.StatusBadGateway, backend.ErrorSourceDownstream,
			fmt.Sprintf("the gpuwatch server's answer to %s is over %d MiB: narrow the time range", pathOnly(path), maxAnswerBytes>>20)}
	}
	if resp.StatusCode == http.StatusUnauthorized && c.token == "" {
		return nil, &callError{backend.StatusUnauthorized, backend.ErrorSourceDownstream,
			"the gpuwatch server wants a token (401 Unauthorized): set a read-role token in the data source's settings (gpuwatch token --role read)"}
	}
	if resp.StatusCode != http.StatusOK {
		return nil, answerError(resp.StatusCode, pathOnly(path), serverMessage(body))
	}
	return body, nil
}

// answerError says what a status other than 200 means for the panel.
func answerError(code int, path, msg string) *callError {
	switch code {
	case http.StatusUnauthorized:
		return &callError{backend.StatusUnauthorized, backend.ErrorSourceDownstream,
			"the gpuwatch server refused the data source's token (401 Unauthorized): set a valid read-role token in the data source's settings (gpuwatch token --role read)" + detail(msg)}
	case http.StatusForbidden:
		return &callError{backend.StatusForbidden, backend.ErrorSourceDownstream,
			"the gpuwatch server refused the data source's token (403 Forbidden): the token needs the read role" + detail(msg)}
	case http.StatusBadRequest:
		return &callError{backend.StatusBadRequest, backend.ErrorSourceDownstream, "the gpuwatch server refused the query: " + msg}
	case http.StatusNotFound:
		return &callError{backend.StatusNotFound, backend.ErrorSourceDownstream, "not found: " + msg}
	}
	return &callError{backend.Status(code), backend.ErrorSourceFromHTTPStatus(code),
		fmt.Sprintf("the gpuwatch server answered %s to %s: %s", http.StatusText(code), path, msg)}
}

func detail(msg string) string {
	if msg == "" {
		return ""
	}
	return " (" + msg + ")"
}

// serverMessage is the error the server's JSON answer carries
// ({"error": …}), else the start of the body.
func serverMessage(body []byte) string {
	var e struct {
		Error string `json:"error"`
	}
	if json.Unmarshal(body, &e) == nil && e.Error != "" {
		return e.Error
	}
	s := []rune(strings.TrimSpace(string(body)))
	if len(s) > 300 {
		return string(s[:300]) + "…"
	}
	return string(s)
}

func pathOnly(p string) string {
	p, _, _ = strings.Cut(p, "?")
	return p
}

func isTimeout(err error) bool {
	var t interface{ Timeout() bool }
	return errors.As(err, &t) && t.Timeout()
}

// stripURL is a client error without the request line *url.Error repeats
// (the caller says which server).
func stripURL(err error) error {
	if ue := (*url.Error)(nil); errors.As(err, &ue) && ue.Err != nil {
		return ue.Err
	}
	return err
}
