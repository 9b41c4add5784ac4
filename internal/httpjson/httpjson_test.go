package httpjson

import (
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

type inner struct {
	Node string `json:"node"`
}

type req struct {
	inner
	GPUs  int      `json:"gpus"`
	Lease duration `json:"lease"`
}

type duration time.Duration

func (d *duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	*d = duration(v)
	return err
}

func TestDecodeStrict(t *testing.T) {
	for _, tc := range []struct{ body, want string }{
		{`{"node":"gpu01","gpus":2,"lease":"1m"}`, ""},
		{``, "empty body"},
		{`{"node":"gpu01"`, "invalid JSON at byte 15: the body ends inside a value"},
		{`{"node":}`, "invalid JSON at byte 9"},
		{`{"gpus":"two"}`, `field "gpus": want an integer, got string`},
		{`{"node":7}`, `field "node": want a string, got number`},
		{`{"gpu":2}`, `unknown field "gpu"`},
		{`{"lease":"10x"}`, `field "lease": time: unknown unit`},
		{`{"node":"a"} {"node":"b"}`, "trailing data after the JSON object"},
		{`[1]`, "want a JSON object, got array"},
	} {
		var r req
		err := DecodeStrict([]byte(tc.body), &r)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", tc.body, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: %v, want %q", tc.body, err, tc.want)
		}
	}
}

func TestError(t *testing.T) {
	rec := httptest.NewRecorder()
	Error(rec, 404, "no such node")
	if rec.Code != 404 || rec.Header().Get("Content-Type") != "application/json" || !strings.Contains(rec.Body.String(), `"error": "no such node"`) {
		t.Errorf("%d %q %s", rec.Code, rec.Header().Get("Content-Type"), rec.Body)
	}
}
