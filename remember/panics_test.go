package remember

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// TestPanicBreaksTheStoreNotTheProcess: a panic in one of the store's goroutines (here its
// loop, through an inspection run on it) is recovered: the store tells its owner it broke,
// with where and why, and the process goes on.
func TestPanicBreaksTheStoreNotTheProcess(t *testing.T) {
	broken := make(chan error, 1)
	c := newCluster(t, 1, func(cfg *Config) { cfg.Broken = func(err error) { broken <- err } })
	s := c.stores[0]
	s.inbox <- storeInput{fn: func() { panic("boom\nsecond line") }}
	select {
	case err := <-broken:
		if !errors.Is(err, ErrBroken) || !strings.Contains(err.Error(), "the store's loop panicked: boom second line") {
			t.Fatalf("Broken got %v", err)
		}
	case <-time.After(testTimeout):
		t.Fatal("the panic was not reported")
	}
}
