package remember

import (
	"context"
	"crypto/rand"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"

	"github.com/shardmesh/shardmesh/internal/testlog"
	"github.com/shardmesh/shardmesh/p2p"
)

// testTimeout bounds every wait in a test.
const testTimeout = 20 * time.Second

// testLogLevel is the level of test logs; lower it to debug a test.
var testLogLevel = slog.LevelWarn

func testContext(t testing.TB) context.Context { return testContextFor(t, testTimeout) }

// testContextFor is testContext for a test whose calls take longer in all than testTimeout
// on a loaded machine under the race detector (thousands of calls one after the other).
func testContextFor(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// testLogger logs to the test's output until the test ends.
func testLogger(t testing.TB) *slog.Logger { return testlog.New(t, testLogLevel) }

// cluster is n members on loopback, each with a host and (when open) a store.
type cluster struct {
	t      testing.TB
	log    *slog.Logger
	hosts  []*p2p.Host
	dirs   []string
	stores []*Store
	tune   func(*Config)

	mu      sync.Mutex
	members []NodeID
	place   *Placement
}

// newCluster starts n connected hosts and opens a store on each; tune adjusts every
// store's Config (the defaults here: fast anti-entropy, short timeouts).
func newCluster(t testing.TB, n int, tune func(*Config)) *cluster {
	t.Helper()
	c := &cluster{t: t, log: testLogger(t), tune: tune, stores: make([]*Store, n)}
	for i := range n {
		key, _, err := crypto.GenerateEd25519Key(rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		h, err := p2p.New(testContext(t), p2p.Config{Identity: key, Logger: c.log})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = h.Close() })
		c.hosts = append(c.hosts, h)
		c.members = append(c.members, NodeID(h.ID().String()))
		c.dirs = append(c.dirs, filepath.Join(t.TempDir(), fmt.Sprintf("store-%d", i)))
	}
	for i := range c.hosts {
		for j := i + 1; j < n; j++ {
			if _, err := c.hosts[i].Connect(testContext(t), c.hosts[j].Addrs()[0]); err != nil {
				t.Fatal(err)
			}
		}
	}
	for i := range n {
		c.open(i)
	}
	if c.config(0).Placement() != nil { // a test that sets the placement later waits itself
		c.waitGroup()
	}
	return c
}

// waitGroup waits until the metadata group holds every voter of the placement and has a
// leader, as every open store sees it.
func (c *cluster) waitGroup() {
	c.t.Helper()
	voters := c.placement().Meta()
	for i, s := range c.stores {
		if s == nil {
			continue
		}
		waitFor(c.t, fmt.Sprintf("member %d to see the metadata group formed", i), func() bool {
			st := s.MetaStatus()
			if st.Leader == "" && slices.Contains(voters, c.id(i)) {
				return false
			}
			if !slices.Contains(voters, c.id(i)) {
				return true // not a voter: it forwards
			}
			n := 0
			for _, v := range st.Voters {
				if slices.Contains(voters, NodeID(v.Name)) {
					n++
				}
			}
			return st.Voter && n == len(voters) && len(st.Voters) == len(voters)
		})
	}
}

func (c *cluster) config(i int) Config {
	cfg := Config{
		Dir:                 c.dirs[i],
		Host:                c.hosts[i],
		Placement:           c.placement,
		AntiEntropyInterval: 50 * time.Millisecond,
		Timeout:             2 * time.Second,
		Logger:              c.log.With("member", i),
	}
	if c.tune != nil {
		c.tune(&cfg)
	}
	return cfg
}

// open opens member i's store (again).
func (c *cluster) open(i int) *Store {
	c.t.Helper()
	s, err := Open(testContext(c.t), c.config(i))
	if err != nil {
		c.t.Fatal(err)
	}
	c.stores[i] = s
	c.t.Cleanup(func() { _ = s.Close() })
	return s
}

// closeStore closes member i's store (its host stays up: it answers nothing).
func (c *cluster) closeStore(i int) {
	c.t.Helper()
	if err := c.stores[i].Close(); err != nil {
		c.t.Fatal(err)
	}
}

// placement is the members' placement: the metadata (every key, without a Layout) on
// the oldest five, by index.
func (c *cluster) placement() *Placement {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.place == nil {
		ms := make([]PlacedMember, len(c.members))
		for i, id := range c.members {
			ms[i] = PlacedMember{ID: id, Age: uint64(i + 1)}
		}
		c.place = NewPlacement(ms, 0, 0, nil)
	}
	return c.place
}

// setMembers sets the members every store sees, by index.
func (c *cluster) setMembers(idx ...int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.members = c.members[:0]
	for _, i := range idx {
		c.members = append(c.members, NodeID(c.hosts[i].ID().String()))
	}
	c.place = nil
}

// local returns member i's own entry of key, as stored on its disk.
func (c *cluster) local(i int, key string) entry {
	c.t.Helper()
	es, err := readEntries(c.stores[i].db, []string{key})
	if err != nil {
		c.t.Fatal(err)
	}
	return es[0]
}

// waitFor polls cond until it holds or the test times out.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(testTimeout)
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		<-tick.C
	}
}
