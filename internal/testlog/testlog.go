// Package testlog gives tests a slog.Logger that writes to the test's output and falls
// silent when the test ends (libp2p and store goroutines may still log after Close, and
// testing panics on a Log after the test completed).
package testlog

import (
	"log/slog"
	"sync"
	"testing"
)

// New returns a logger at level writing to t's output until t ends. Call it before
// registering the cleanups that close what logs, so it falls silent after them.
func New(t testing.TB, level slog.Level) *slog.Logger {
	w := &writer{t: t}
	t.Cleanup(w.stop)
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: level}))
}

type writer struct {
	mu   sync.Mutex
	t    testing.TB
	done bool
}

func (w *writer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.done {
		w.t.Helper()
		w.t.Logf("%s", p)
	}
	return len(p), nil
}

func (w *writer) stop() {
	w.mu.Lock()
	w.done = true
	w.mu.Unlock()
}
