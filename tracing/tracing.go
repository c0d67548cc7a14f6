// Package tracing sets up OpenTelemetry tracing from the standard OTEL_* environment
// variables, for a member's spans (node.Config.Tracing, shardmesh.WithTracing).
//
// Tracing is off unless OTEL_TRACES_EXPORTER is "otlp" (the spans then go over OTLP/HTTP
// with protobuf): OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT (default
// http://localhost:4318), OTEL_EXPORTER_OTLP_HEADERS, OTEL_EXPORTER_OTLP_TIMEOUT, the batch
// processor's OTEL_BSP_*, the sampler's OTEL_TRACES_SAMPLER and OTEL_TRACES_SAMPLER_ARG,
// and the resource's OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES, all as the
// OpenTelemetry specification defines them.
package tracing

import (
	"context"
	"fmt"
	"os"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// FromEnv returns a tracer provider as the process's OTEL_* variables configure it, or nil
// when tracing is off. service names the service when OTEL_SERVICE_NAME does not; instance
// (say, the member's data directory) becomes service.instance.id. Shut the provider down at
// exit: it flushes the spans it holds.
func FromEnv(ctx context.Context, service, instance string) (*sdktrace.TracerProvider, error) {
	// An empty variable counts as unset, as the specification says.
	switch exp := strings.TrimSpace(os.Getenv("OTEL_TRACES_EXPORTER")); exp {
	case "", "none":
		return nil, nil
	case "otlp":
	default:
		return nil, fmt.Errorf("OTEL_TRACES_EXPORTER=%q: only otlp (OTLP over HTTP) or none is supported", exp)
	}
	if p := strings.TrimSpace(os.Getenv("OTEL_EXPORTER_OTLP_PROTOCOL")); p != "" && p != "http/protobuf" {
		return nil, fmt.Errorf("OTEL_EXPORTER_OTLP_PROTOCOL=%q: only http/protobuf is supported", p)
	}
	exp, err := otlptracehttp.New(ctx)
	if err != nil {
		return nil, fmt.Errorf("OTLP trace exporter: %w", err)
	}
	attrs := []attribute.KeyValue{attribute.String("service.name", service)}
	if instance != "" {
		attrs = append(attrs, attribute.String("service.instance.id", instance))
	}
	// WithFromEnv after the defaults: OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES win.
	res, err := resource.New(ctx, resource.WithAttributes(attrs...), resource.WithFromEnv())
	if err != nil {
		return nil, fmt.Errorf("trace resource: %w", err)
	}
	return sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res)), nil
}
