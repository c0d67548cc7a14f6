package adminserver

import (
	"context"
	"sync"
	"testing"
	"time"
)

// TestCallsDuringCloseDoNotPanic: calls that come and go while Close waits for the calls in
// progress neither crash it — a chaos run's daemon did, "sync: WaitGroup is reused before
// previous Wait has returned", when an admin call came in during its shutdown — nor end the
// wait early for a call still in progress.
func TestCallsDuringCloseDoNotPanic(t *testing.T) {
	self := newID(t)
	for range 200 {
		s := newTestServer(t, newFakeBackend(self.String()), Config{})
		var wg sync.WaitGroup
		for range 4 {
			wg.Go(func() {
				for range 50 {
					s.enter()
					s.leave()
				}
			})
		}
		s.Close(context.Background())
		wg.Wait()
	}
	s := newTestServer(t, newFakeBackend(self.String()), Config{})
	s.enter()
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	s.Close(ctx)
	if ctx.Err() == nil {
		t.Fatal("Close returned while a call was in progress")
	}
	s.leave()
	s.Close(context.Background()) // returns: the call left
}
