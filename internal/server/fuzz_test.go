package server

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/scheduler/drain"
)

// fuzzServer is one server with the drain controller and placement, shared by
// a fuzz target's inputs; requests reach it as an authenticated admin would.
func fuzzServer(f *testing.F) http.Handler {
	s, err := New(Options{DataDir: f.TempDir(), Auth: authInsecure(),
		Drain:     &DrainOptions{Actuator: drain.NewLogActuator(io.Discard), ActuatorName: "log", PollInterval: time.Millisecond},
		Placement: &PlacementOptions{Interval: time.Hour}})
	if err != nil {
		f.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { s.Run(ctx); close(done) }()
	f.Cleanup(func() { cancel(); <-done; s.Close(context.Background()) })
	return s.Handler()
}

// fuzzPost posts body to path and checks the answer: never a 5xx for what a
// client sent, always JSON with an error on a 4xx.
func fuzzPost(t *testing.T, h http.Handler, path string, body []byte) {
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, path, bytes.NewReader(body)))
	if rec.Code >= 500 {
		t.Fatalf("POST %s %q: %d %s", path, body, rec.Code, rec.Body)
	}
	if rec.Code >= 400 && !bytes.Contains(rec.Body.Bytes(), []byte(`"error"`)) {
		t.Fatalf("POST %s %q: %d without an error message: %s", path, body, rec.Code, rec.Body)
	}
}

// FuzzHealthPush: whatever an agent (or anyone with an agent token) pushes,
// the server answers 202 or a 4xx that says why, and keeps serving.
func FuzzHealthPush(f *testing.F) {
	f.Add(healthReport("node-01"))
	f.Add([]byte(`{"node":"n","state":"drained","gpus":[{"index":0,"state":"drained","severity":"critical","conditions":[{"kind":"gpu_lost","severity":"critical"}]}]}`))
	f.Add([]byte(`{"node":"","state":"healthy"}`))
	f.Add([]byte(`{"node":"x","state":"nonsense"}`))
	f.Add([]byte(`[]`))
	h := fuzzServer(f)
	f.Fuzz(func(t *testing.T, body []byte) {
		fuzzPost(t, h, APIPrefix+"/health", body)
	})
}

// FuzzManualRequest: the bodies of drain, resume and budget reset.
func FuzzManualRequest(f *testing.F) {
	f.Add([]byte(`{"node":"gpu01","reason":"fan","user":"alice"}`), uint8(0))
	f.Add([]byte(`{"node":"gpu01"}`), uint8(1))
	f.Add([]byte(`{"node":"gpu01\n{\"x\":1}","reason":"a\nb\u0000"}`), uint8(0))
	f.Add([]byte(`{"user":"root"}`), uint8(2))
	h := fuzzServer(f)
	paths := []string{APIPrefix + "/drain", APIPrefix + "/resume", APIPrefix + "/budget/reset"}
	f.Fuzz(func(t *testing.T, body []byte, which uint8) {
		fuzzPost(t, h, paths[int(which)%len(paths)], body)
	})
}
