package tracing

import (
	"context"
	"strings"
	"testing"
)

// TestFromEnv: off unless OTEL_TRACES_EXPORTER is otlp; an exporter or a protocol it does
// not offer is refused with an error that names the variable.
func TestFromEnv(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		exporter, protocol string // "-": unset
		on                 bool
		err                string
	}{
		{exporter: "-", protocol: "-"},
		{exporter: "none", protocol: "-"},
		{exporter: "otlp", protocol: "-", on: true},
		{exporter: "otlp", protocol: "http/protobuf", on: true},
		{exporter: "console", protocol: "-", err: "OTEL_TRACES_EXPORTER"},
		{exporter: "otlp", protocol: "grpc", err: "OTEL_EXPORTER_OTLP_PROTOCOL"},
	} {
		set := func(k, v string) {
			if v == "-" {
				t.Setenv(k, "") // restored after the test
				return
			}
			t.Setenv(k, v)
		}
		set("OTEL_TRACES_EXPORTER", c.exporter)
		set("OTEL_EXPORTER_OTLP_PROTOCOL", c.protocol)
		t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:1") // never dialled here
		tp, err := FromEnv(ctx, "test", "/tmp/a")
		switch {
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("%s/%s: error %v, want one naming %s", c.exporter, c.protocol, err, c.err)
		case c.err == "" && err != nil:
			t.Errorf("%s/%s: %v", c.exporter, c.protocol, err)
		case (tp != nil) != c.on:
			t.Errorf("%s/%s: tracing on %v, want %v", c.exporter, c.protocol, tp != nil, c.on)
		}
		if tp != nil {
			_ = tp.Shutdown(ctx)
		}
	}
}
