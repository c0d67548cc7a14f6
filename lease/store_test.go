package lease

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"

	"github.com/shardmesh/shardmesh/internal/testlog"
	"github.com/shardmesh/shardmesh/p2p"
	"github.com/shardmesh/shardmesh/remember"
)

// stores opens n replicas of a replicated store on real libp2p hosts and Badger.
func stores(t *testing.T, n int) []*remember.Store {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	log := testlog.New(t, 0)
	var hosts []*p2p.Host
	var members []remember.NodeID
	for range n {
		key, _, err := crypto.GenerateEd25519Key(rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		h, err := p2p.New(ctx, p2p.Config{Identity: key, Logger: log})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = h.Close() })
		hosts, members = append(hosts, h), append(members, remember.NodeID(h.ID().String()))
	}
	for i := range hosts {
		for j := i + 1; j < n; j++ {
			if _, err := hosts[i].Connect(ctx, hosts[j].Addrs()[0]); err != nil {
				t.Fatal(err)
			}
		}
	}
	var out []*remember.Store
	placement := remember.FixedPlacement(members...)
	for i, h := range hosts {
		s, err := remember.Open(ctx, remember.Config{Dir: filepath.Join(t.TempDir(), fmt.Sprint("store-", i)), Host: h,
			Placement: placement, Timeout: 2 * time.Second, Logger: log}) // majorities of 2
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		out = append(out, s)
	}
	// A new store joining the metadata's replicas refills them from the others before its
	// answers count: the leases' reads would wait for it, and time out on a loaded machine.
	deadline := time.Now().Add(30 * time.Second)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for _, s := range out {
		for s.Refill().Active {
			if time.Now().After(deadline) {
				t.Fatal("the stores did not refill the metadata within 30 s")
			}
			<-tick.C
		}
	}
	return out
}

// TestOneHolderAtATime: owners on three replicas race for one lease, many times; at most one
// holds it at any moment, and a released lease is taken at once by another.
func TestOneHolderAtATime(t *testing.T) {
	ss := stores(t, 3)
	cfg := StoreConfig{HeartbeatTimeout: 3 * time.Second, HeartbeatInterval: 500 * time.Millisecond}
	ctx := context.Background()
	for round := range 10 {
		name := fmt.Sprint("shard-", round)
		var holders atomic.Int32
		var leases []Lease
		var wg sync.WaitGroup
		got := make([]bool, 6)
		for i := range 6 {
			l := NewStoreProvider(ss[i%3], cfg).Lease(name, fmt.Sprint("owner-", i))
			leases = append(leases, l)
			wg.Go(func() {
				ok, err := l.Acquire(ctx, nil)
				if err != nil {
					t.Errorf("acquire: %v", err)
				}
				if ok {
					holders.Add(1)
				}
				got[i] = ok
			})
		}
		wg.Wait()
		if h := holders.Load(); h > 1 {
			t.Fatalf("round %d: %d owners hold the lease at once: %v", round, h, got)
		}
		for i, ok := range got {
			if ok {
				if err := leases[i].Release(ctx); err != nil {
					t.Fatal(err)
				}
				next := leases[(i+1)%6]
				if ok, err := next.Acquire(ctx, nil); !ok || err != nil {
					t.Fatalf("round %d: the released lease was not taken by another owner: %v %v", round, ok, err)
				}
				_ = next.Release(ctx)
			}
		}
	}
}

// TestHolderRenewsAndAnExpiredLeaseIsTaken: the holder keeps the lease past its timeout by
// renewing; once its renewals stop (its replica closed), it reports the lease lost within
// the timeout, and another owner takes it after the lease expired — not before.
func TestHolderRenewsAndAnExpiredLeaseIsTaken(t *testing.T) {
	ss := stores(t, 3)
	cfg := StoreConfig{HeartbeatTimeout: 2 * time.Second, HeartbeatInterval: 300 * time.Millisecond}
	ctx := context.Background()
	a := NewStoreProvider(ss[0], cfg).Lease("s", "a")
	b := NewStoreProvider(ss[1], cfg).Lease("s", "b")
	lost := make(chan error, 1)
	if ok, err := a.Acquire(ctx, func(err error) { lost <- err }); !ok || err != nil {
		t.Fatal(ok, err)
	}
	time.Sleep(3 * time.Second) // past the timeout: renewed
	if !a.CheckLease() {
		t.Fatal("the holder lost a lease it renews")
	}
	if ok, _ := b.Acquire(ctx, nil); ok {
		t.Fatal("another owner took a renewed lease")
	}
	_ = ss[0].Close() // a's renewals fail from now on
	stopped := time.Now()
	select {
	case err := <-lost:
		t.Logf("lost: %v", err)
	case <-time.After(3 * time.Second):
		t.Fatal("the holder did not report the lease lost")
	}
	if a.CheckLease() {
		t.Fatal("CheckLease true after the loss")
	}
	// ss[0] founded the metadata group and leads it: closing it starts an election (1-2 s of
	// raft's randomized timeout), and a call made meanwhile fails with ErrNoQuorum, which a
	// lease's owner retries as the shard does.
	giveUp := time.Now().Add(20 * time.Second)
	for {
		ok, err := b.Acquire(ctx, nil)
		if errors.Is(err, remember.ErrNoQuorum) && time.Now().Before(giveUp) {
			t.Logf("acquire during the election, %v after the close: %v", time.Since(stopped).Round(time.Millisecond), err)
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if ok {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if waited := time.Since(stopped); waited < cfg.HeartbeatTimeout-cfg.HeartbeatInterval-500*time.Millisecond {
		t.Fatalf("taken %v after the holder's last chance to renew: before the lease expired", waited)
	}
}
