package adminserver

import (
	"context"
	"sync"
	"testing"
)

// TestCallsDuringCloseDoNotPanic: calls that arrive while Close waits for the calls in
// progress are refused, not counted in — adding to a WaitGroup from zero while it is waited
// on panics ("WaitGroup is reused before previous Wait has returned"; a chaos run's daemon
// crashed so when an admin call came in during its shutdown).
func TestCallsDuringCloseDoNotPanic(t *testing.T) {
	self := newID(t)
	for range 200 {
		s := newTestServer(t, newFakeBackend(self.String()), Config{})
		var wg sync.WaitGroup
		for range 4 {
			wg.Go(func() {
				for range 50 {
					if s.enter() {
						s.calls.Done()
					}
				}
			})
		}
		s.Close(context.Background())
		wg.Wait()
		if s.enter() {
			t.Fatal("a call was counted in after Close")
		}
	}
}
