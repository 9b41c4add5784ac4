package service

import (
	"github.com/gpuwatch/gpuwatch/internal/httpjson"

	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

// placeSeeds are place request bodies: the documented ones (docs/placement.md)
// first, then the malformed ones TestPlaceBadRequests names.
func placeSeeds(f *testing.F) []string {
	f.Helper()
	md, err := os.ReadFile("../../../docs/placement.md")
	if err != nil {
		f.Fatal(err)
	}
	var out []string
	in := false
	var b strings.Builder
	for line := range strings.Lines(string(md)) {
		switch {
		case !in && strings.TrimSpace(line) == "```json":
			in = true
			b.Reset()
		case in && strings.TrimSpace(line) == "```":
			in = false
			out = append(out, b.String())
		case in:
			b.WriteString(line)
		}
	}
	if len(out) == 0 {
		f.Fatal("no JSON example in docs/placement.md")
	}
	var doc PlaceRequest
	if err := httpjson.DecodeStrict([]byte(out[0]), &doc); err != nil {
		f.Fatalf("the documented place request does not decode: %v\n%s", err, out[0])
	}
	return append(out, `{"gpus": 8}`, `{"gpus": 16, "gpus_per_node": 8, "lease": "10m", "dry_run": true, "required_tier": "leaf"}`,
		`{"gpus": 1, "milli": 250, "model": "h100", "near": ["node-00"], "candidates": ["node-01", "node-02"], "exclusive": false}`,
		`{"gpus": 8, "exclusive": true, "require_fresh": true, "explain": true, "preferred_tier": "node", "min_memory_mib": 81000}`,
		`{"gpus": "8"}`, `{"lease": "10x"}`, `{"required_tier": "rack"}`, `[1]`, ``, `{"gpus": 8} x`, `{"near": ["a", 1]}`,
		`{"Request": {}}`, `{"gpus": 8,}`, `{"gpu": 8}`, `{"gpus": 9, "gpus_per_node": 4}`, `{"gpus": 1e400}`, `{"gpus": -1}`,
		`{"lease": "-5m", "gpus": 1}`, `{"job_id": "\u0000\n\ud800", "gpus": 1}`, `null`, `{"gpus": 8} {"gpus": 8}`)
}

// FuzzDecodeStrict: any place request body either decodes, or is refused with
// a one-line message that says what was wrong (naming the unknown field or the
// field with the wrong value, or the byte offset of a syntax error). What
// decodes survives a round trip (encoded again and decoded, it is the same
// request), and Normalize either refuses it with a message naming the
// request's field or leaves a request that normalizes to itself.
func FuzzDecodeStrict(f *testing.F) {
	for _, s := range placeSeeds(f) {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var req PlaceRequest
		err := httpjson.DecodeStrict(data, &req)
		if err != nil {
			checkDecodeError(t, err)
			return
		}
		enc, err := json.Marshal(req)
		if err != nil {
			t.Fatalf("decoded request %+v does not encode: %v", req, err)
		}
		var again PlaceRequest
		if err := httpjson.DecodeStrict(enc, &again); err != nil {
			t.Fatalf("the request encoded again (%s) does not decode: %v", enc, err)
		}
		if !reflect.DeepEqual(nilEmpty(req), nilEmpty(again)) {
			t.Fatalf("round trip changed the request:\n %+v\n %+v", req, again)
		}
		if err := req.Normalize(); err != nil {
			if !strings.HasPrefix(err.Error(), "request: ") {
				t.Fatalf("Normalize refused with %q: want it to start with \"request: \"", err)
			}
			return
		}
		if req.GPUs < 1 {
			t.Fatalf("normalized %+v", req)
		}
		norm := req
		if err := norm.Normalize(); err != nil || !reflect.DeepEqual(norm, req) {
			t.Fatalf("Normalize is not idempotent: %v\n %+v\n %+v", err, req, norm)
		}
	})
}

// nilEmpty: an empty list is written as nothing (omitempty) and read back as
// nil.
func nilEmpty(r PlaceRequest) PlaceRequest {
	if len(r.Near) == 0 {
		r.Near = nil
	}
	if len(r.Candidates) == 0 {
		r.Candidates = nil
	}
	return r
}

// FuzzDecodeRelease: any release request body either decodes into an id that
// survives a round trip, or is refused with a message saying what was wrong.
func FuzzDecodeRelease(f *testing.F) {
	for _, s := range []string{`{"id": "d-1"}`, `{"id": ""}`, `{}`, `{"ID2": "x"}`, `{"id": 7}`, `{"id": "a\u0000"}`, `[]`, ``,
		`{"id": "d-1"} {"id": "d-2"}`, `{"id": "x", "id": "y"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var req ReleaseRequest
		if err := httpjson.DecodeStrict(data, &req); err != nil {
			checkDecodeError(t, err)
			return
		}
		enc, _ := json.Marshal(req)
		var again ReleaseRequest
		if err := httpjson.DecodeStrict(enc, &again); err != nil || again != req {
			t.Fatalf("round trip of %q: %v %q", req.ID, err, again.ID)
		}
	})
}

// checkDecodeError: one line, and it says what kind of problem it is.
func checkDecodeError(t *testing.T, err error) {
	t.Helper()
	msg := err.Error()
	if strings.TrimSpace(msg) == "" || strings.ContainsAny(msg, "\n\r") || !utf8.ValidString(msg) {
		t.Fatalf("error %q is not one line of text", msg)
	}
	for _, kind := range []string{"empty body", "invalid JSON at byte ", "field ", "unknown field ", "want a JSON object",
		"trailing data"} {
		if strings.HasPrefix(msg, kind) {
			return
		}
	}
	t.Fatalf("error %q does not say what was wrong", msg)
}

// FuzzPlaceRelease drives the place and release handlers of a service fed with
// four 8-GPU nodes, as a client would: any body gets 200 or 400 from POST
// /place (503 only before a snapshot, never 500), a JSON answer, and a 400's
// error starts with "place: ". A placement that reserved GPUs is released by
// its id (200), after which nothing is reserved; POST /release with the same
// body answers 200, 400 or 404, never 500, with an error starting "release: ".
func FuzzPlaceRelease(f *testing.F) {
	for _, s := range placeSeeds(f) {
		f.Add([]byte(s))
	}
	s, _ := testService(f, 4, 2, Options{})
	mux := http.NewServeMux()
	s.Register(mux, prefix)
	post := func(t *testing.T, path string, body []byte) (int, []byte) {
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, httptest.NewRequest("POST", prefix+path, bytes.NewReader(body)))
		if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
			t.Fatalf("POST %s %q: content type %q", path, body, ct)
		}
		return rec.Code, rec.Body.Bytes()
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		code, data := post(t, "/place", body)
		switch code {
		case 200:
			var resp PlaceResponse
			if err := json.Unmarshal(data, &resp); err != nil || resp.ID == "" {
				t.Fatalf("place %q: 200 %s", body, data)
			}
			if resp.Reservation != nil {
				rel, _ := json.Marshal(ReleaseRequest{ID: resp.Reservation.ID})
				if code, data := post(t, "/release", rel); code != 200 {
					t.Fatalf("releasing %s: %d %s", resp.Reservation.ID, code, data)
				}
			}
		case 400:
			var e struct{ Error string }
			if json.Unmarshal(data, &e) != nil || !strings.HasPrefix(e.Error, "place: ") {
				t.Fatalf("place %q: 400 %s", body, data)
			}
		default:
			t.Fatalf("place %q: %d %s", body, code, data)
		}
		if n := len(s.Engine().Reservations()); n != 0 {
			t.Fatalf("%d reservations left after place %q", n, body)
		}
		code, data = post(t, "/release", body)
		var e struct{ Error string }
		switch {
		case code == 200:
		case (code == 400 || code == 404) && json.Unmarshal(data, &e) == nil && strings.HasPrefix(e.Error, "release: "):
		default:
			t.Fatalf("release %q: %d %s", body, code, data)
		}
	})
}
