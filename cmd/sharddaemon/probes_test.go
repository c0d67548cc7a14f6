package main

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/shardmesh/shardmesh/admin/adminpb"
)

// probeAnswer is the JSON a probe answers with (shardctl health --json).
type probeAnswer struct {
	Node    string   `json:"node"`
	Live    bool     `json:"live"`
	Ready   bool     `json:"ready"`
	Status  string   `json:"status"`
	Reasons []string `json:"reasons"`
}

func probe(t *testing.T, p probes, path string) (int, probeAnswer) {
	t.Helper()
	mux := http.NewServeMux()
	p.register(mux)
	rec := httptest.NewRecorder()
	mux.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	var a probeAnswer
	if err := json.Unmarshal(rec.Body.Bytes(), &a); err != nil {
		t.Fatalf("%s: body is not JSON: %v\n%s", path, err, rec.Body.String())
	}
	if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
		t.Errorf("%s: Content-Type %q", path, ct)
	}
	return rec.Code, a
}

func TestProbes(t *testing.T) {
	ready := &adminpb.HealthResponse{Node: "n1", Live: true, Ready: true, Status: "Up", Serving: true}
	joining := &adminpb.HealthResponse{Node: "n1", Live: true, Status: "Joining", Reasons: []string{"member is Joining, not Up"}}
	stuck := errors.New("context deadline exceeded")
	tests := []struct {
		name   string
		ping   error
		health *adminpb.HealthResponse
		path   string
		code   int
		reason string
	}{
		{"live", nil, ready, "/healthz", 200, ""},
		{"loop stuck", stuck, ready, "/healthz", 503, "did not take a turn within 2s: context deadline exceeded"},
		{"ready", nil, ready, "/readyz", 200, ""},
		{"not ready says why", nil, joining, "/readyz", 503, "member is Joining, not Up"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := probes{node: "n1", log: slog.New(slog.DiscardHandler),
				ping:   func(context.Context) error { return tt.ping },
				health: func(context.Context) *adminpb.HealthResponse { return tt.health }}
			code, a := probe(t, p, tt.path)
			if code != tt.code {
				t.Fatalf("%s: status %d, want %d (%+v)", tt.path, code, tt.code, a)
			}
			if a.Node != "n1" {
				t.Errorf("node %q, want n1", a.Node)
			}
			if tt.reason != "" && (len(a.Reasons) != 1 || !strings.Contains(a.Reasons[0], tt.reason)) {
				t.Errorf("reasons %q, want one containing %q", a.Reasons, tt.reason)
			}
			if tt.reason == "" && len(a.Reasons) != 0 {
				t.Errorf("reasons %q, want none", a.Reasons)
			}
		})
	}
}
