package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/shardmesh/shardmesh/datadir"
	"github.com/shardmesh/shardmesh/internal/version"
)

// metricsServer serves the member's registry on /metrics, and the probes (probes.go).
type metricsServer struct {
	reg  *prometheus.Registry
	mux  *http.ServeMux
	ln   net.Listener
	srv  *http.Server
	file string
	log  *slog.Logger
}

// listenMetrics creates the member's registry (with the Go runtime and process collectors)
// and listens on addr; nothing is served before serve.
func listenMetrics(addr string, log *slog.Logger) (*metricsServer, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("metrics-listen %q: %w", addr, err)
	}
	reg := prometheus.NewRegistry()
	buildInfo := prometheus.NewGauge(prometheus.GaugeOpts{
		Name:        "shardmesh_build_info",
		Help:        "Always 1; the labels say which release this member runs (during a rolling update, which members run which).",
		ConstLabels: prometheus.Labels{"version": version.Version, "goversion": runtime.Version()},
	})
	buildInfo.Set(1)
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}), buildInfo)
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}))
	return &metricsServer{reg: reg, mux: mux, ln: ln, srv: &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}, log: log}, nil
}

// serve starts serving and writes the bound address to dataDir/metrics-addr
// (datadir.MetricsAddrFile), removed at close: with --metrics-listen 127.0.0.1:0 it is how
// scripts and tests find the port the system chose.
func (m *metricsServer) serve(dataDir string) error {
	addr := m.ln.Addr().String()
	m.file = filepath.Join(dataDir, datadir.MetricsAddrFile)
	tmp := m.file + ".tmp"
	if err := os.WriteFile(tmp, []byte(addr+"\n"), 0o600); err != nil {
		return fmt.Errorf("write %s: %w", m.file, err)
	}
	if err := os.Rename(tmp, m.file); err != nil {
		return fmt.Errorf("write %s: %w", m.file, err)
	}
	go func() {
		if err := m.srv.Serve(m.ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			m.log.Error("metrics server stopped", "err", err)
		}
	}()
	m.log.Info("serving metrics", "addr", "http://"+addr+"/metrics")
	return nil
}

// close stops serving and removes the address file.
func (m *metricsServer) close() {
	if m == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_ = m.srv.Shutdown(ctx)
	_ = m.ln.Close()
	if m.file != "" {
		_ = os.Remove(m.file)
	}
}
