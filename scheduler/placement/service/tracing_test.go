package service

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"go.opentelemetry.io/otel"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/gpuwatch/gpuwatch/scheduler/framework"
)

// TestSetupTracing: with an endpoint, a placement decision's span arrives at an
// OTLP/HTTP receiver as protobuf on /v1/traces, with the service name.
func TestSetupTracing(t *testing.T) {
	prev := otel.GetTracerProvider()
	t.Cleanup(func() { otel.SetTracerProvider(prev) })
	var mu sync.Mutex
	var spans []string
	var service string
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if r.URL.Path != TracesPath || r.Header.Get("Content-Type") != "application/x-protobuf" {
			t.Errorf("OTLP request %s %s %s", r.Method, r.URL.Path, r.Header.Get("Content-Type"))
		}
		var req coltracepb.ExportTraceServiceRequest
		if err := proto.Unmarshal(body, &req); err != nil {
			t.Errorf("OTLP body: %v", err)
		}
		mu.Lock()
		defer mu.Unlock()
		for _, rs := range req.ResourceSpans {
			for _, a := range rs.GetResource().GetAttributes() {
				if a.Key == "service.name" {
					service = a.GetValue().GetStringValue()
				}
			}
			for _, ss := range rs.ScopeSpans {
				for _, sp := range ss.Spans {
					spans = append(spans, sp.Name)
				}
			}
		}
		w.Header().Set("Content-Type", "application/x-protobuf")
		out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
		_, _ = w.Write(out)
	}))
	defer recv.Close()

	shutdown, err := SetupTracing(context.Background(), recv.URL)
	if err != nil {
		t.Fatal(err)
	}
	s, _ := testService(t, 2, 2, Options{})
	if _, err := s.Engine().DryRun(context.Background(), framework.Request{GPUs: 4}); err != nil {
		t.Fatal(err)
	}
	if err := shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if !strings.Contains(strings.Join(spans, ","), "gpuwatch.placement.decide") || service != "gpuwatch" {
		t.Errorf("spans %q from service %q; want gpuwatch.placement.decide from gpuwatch", spans, service)
	}
}

func TestSetupTracingOffAndBad(t *testing.T) {
	shutdown, err := SetupTracing(context.Background(), "")
	if err != nil || shutdown(context.Background()) != nil {
		t.Errorf("empty endpoint: %v", err)
	}
	for _, ep := range []string{"collector:4318", "ftp://x", "http://"} {
		if _, err := SetupTracing(context.Background(), ep); err == nil || !strings.Contains(err.Error(), "want the OTLP/HTTP collector") {
			t.Errorf("endpoint %q: %v", ep, err)
		}
	}
}
