package shardmesh_test

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shardmesh/shardmesh"
	"github.com/shardmesh/shardmesh/config"
)

// TestBurstBeyondBufferSizeLosesNothing: a burst of tells from two members, sent before any
// shard has a home, many times a buffer-size of 8. Akka drops what does not fit in the
// buffer; here the senders wait (locally, and through the stream from the other member), and
// every message is handled.
func TestBurstBeyondBufferSizeLosesNothing(t *testing.T) {
	systems := startCluster(t, 2, func(c *config.Config) {
		c.Membership.MinNrOfMembers = 2
		c.Sharding.BufferSize = 8
	})
	var handled atomic.Int64
	regions := make([]*shardmesh.Region[int, int], len(systems))
	for i, s := range systems {
		r, err := shardmesh.Init(s, sinkType(&handled))
		if err != nil {
			t.Fatal(err)
		}
		regions[i] = r
	}
	const perMember = 5000
	var wg sync.WaitGroup
	for i, r := range regions {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range perMember {
				if err := r.EntityRefFor("e" + strconv.Itoa(j%500)).Tell(i*perMember + j); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	deadline := time.Now().Add(30 * time.Second)
	for handled.Load() < 2*perMember && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if got := handled.Load(); got != 2*perMember {
		t.Fatalf("handled %d of %d messages", got, 2*perMember)
	}
	// Every credit came back: an ask goes through at once.
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if _, err := regions[0].EntityRefFor("e1").Ask(ctx, 1); err != nil {
		t.Fatal(err)
	}
}
