package main

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"google.golang.org/protobuf/encoding/protojson"

	"github.com/shardmesh/shardmesh/admin/adminpb"
)

// probeTimeout bounds one probe's answer: a loop that does not take a turn within it is
// not live (the admin health call allows the same).
const probeTimeout = 2 * time.Second

// probes answers Kubernetes-style probes on the metrics listener:
//
//   - /healthz: live, the process answers and the member's loop takes a turn within
//     probeTimeout. 200 {"live":true,…}, else 503 with the reason. A liveness probe.
//   - /readyz: ready, as shardctl health answers it (live, Up, holding the majority lease,
//     its regions registered, and whatever else the admin health call checks). 200 when
//     ready, else 503 with every reason. A readiness probe.
//
// Both bodies are the JSON of shardctl health --json.
type probes struct {
	node   string
	ping   func(context.Context) error
	health func(context.Context) *adminpb.HealthResponse
	log    *slog.Logger
}

// register adds the probes to mux.
func (p probes) register(mux *http.ServeMux) {
	mux.HandleFunc("GET /healthz", p.healthz)
	mux.HandleFunc("GET /readyz", p.readyz)
}

func (p probes) healthz(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), probeTimeout)
	defer cancel()
	h := &adminpb.HealthResponse{Node: p.node, Live: true}
	if err := p.ping(ctx); err != nil {
		h.Live = false
		h.Reasons = []string{"not live: the member's loop did not take a turn within " + probeTimeout.String() + ": " + err.Error()}
	}
	p.write(w, h, h.Live)
}

func (p probes) readyz(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), probeTimeout)
	defer cancel()
	h := p.health(ctx)
	p.write(w, h, h.Live && h.Ready)
}

var probeJSON = protojson.MarshalOptions{UseProtoNames: true, EmitUnpopulated: true}

func (p probes) write(w http.ResponseWriter, h *adminpb.HealthResponse, ok bool) {
	body, err := probeJSON.Marshal(h)
	if err != nil {
		p.log.Error("encode probe answer", "err", err)
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	if !ok {
		w.WriteHeader(http.StatusServiceUnavailable)
	}
	_, _ = w.Write(append(body, '\n'))
}
