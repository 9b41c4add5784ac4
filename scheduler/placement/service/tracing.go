package service

import (
	"context"
	"fmt"
	"net/url"
	"strings"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// TracesPath is the OTLP/HTTP traces path appended to an endpoint given without
// one.
const TracesPath = "/v1/traces"

// SetupTracing exports the process's spans (the engine's
// gpuwatch.placement.decide and gpuwatch.placement.evaluate among them) over
// OTLP/HTTP protobuf to endpoint, "http://collector:4318" (TracesPath is added
// when the URL has no path) or a full "https://host/custom/v1/traces", by
// installing a batching tracer provider as the global one. An empty endpoint
// turns tracing off and leaves the global provider alone. shutdown flushes the
// spans still batched and stops the exporter; call it before exiting.
func SetupTracing(ctx context.Context, endpoint string) (shutdown func(context.Context) error, err error) {
	noop := func(context.Context) error { return nil }
	endpoint = strings.TrimSpace(endpoint)
	if endpoint == "" {
		return noop, nil
	}
	u, err := url.Parse(endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return noop, fmt.Errorf("tracing endpoint %q: want the OTLP/HTTP collector's http://host:port (4318 by default)", endpoint)
	}
	if u.Path == "" || u.Path == "/" {
		u.Path = TracesPath
	}
	exp, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(u.String()))
	if err != nil {
		return noop, fmt.Errorf("tracing endpoint %q: cannot create the OTLP exporter: %w", endpoint, err)
	}
	res, err := resource.Merge(resource.Default(), resource.NewSchemaless(attribute.String("service.name", "gpuwatch")))
	if err != nil {
		res = resource.NewSchemaless(attribute.String("service.name", "gpuwatch"))
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	otel.SetTracerProvider(tp)
	return func(ctx context.Context) error {
		if err := tp.Shutdown(ctx); err != nil {
			return fmt.Errorf("cannot flush spans to %s: %w", u, err)
		}
		return nil
	}, nil
}
