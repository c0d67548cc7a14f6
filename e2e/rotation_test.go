package e2e

import (
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// TestRotatingKeysWithoutDowntime rotates the cluster key and the cluster authority of a
// three-member cluster with admission as docs/security.md says, in three rolling restarts,
// while a client keeps asking the counters through a member that is not restarting: every
// ask is answered, the counters keep their values, and at the end an admin with a credential
// of the new authority is an admin.
func TestRotatingKeysWithoutDowntime(t *testing.T) {
	if testing.Short() {
		t.Skip("long: nine graceful restarts")
	}
	keys := t.TempDir()
	oldKey, newKey := keygenCluster(t, t.TempDir()), keygenCluster(t, t.TempDir())
	oldAuthKey, oldAuth := keygenAuthority(t, keys, "old-authority.key")
	newAuthKey, newAuth := keygenAuthority(t, keys, "new-authority.key")
	adminKey, _ := keygenAdmin(t, keys, "admin.key")
	c := newCluster(t, "--entity-types", "counter", "--set", "sharding.number-of-shards=30")
	names := []string{"m1", "m2", "m3"}
	for _, name := range names {
		c.credentialMember(name, oldAuthKey)
	}
	phases := [][]string{
		{"--cluster-key", oldKey, "--cluster-authority", oldAuth},
		{"--cluster-key", oldKey, "--cluster-key-accept", newKey, "--cluster-authority", oldAuth, "--cluster-authority", newAuth},
		{"--cluster-key", newKey, "--cluster-key-accept", oldKey, "--cluster-authority", oldAuth, "--cluster-authority", newAuth},
		{"--cluster-key", newKey, "--cluster-authority", newAuth},
	}
	var clientKey atomic.Value // the key the client dials with
	clientKey.Store(oldKey)
	start := func(name string, phase []string, join *daemon) *daemon {
		args := append([]string{}, phase...)
		if join != nil {
			args = append(args, "--join", join.addr())
		}
		d := c.start(name, args...)
		d.key = clientKey.Load().(string)
		return d
	}
	ds := []*daemon{start("m1", phases[0], nil)}
	ds = append(ds, start("m2", phases[0], ds[0]), start("m3", phases[0], ds[0]))
	if !waitFor(15*time.Second, func() bool { return allAgree(ds, 3) }) {
		t.Fatal("cluster did not form")
	}
	counters := ids(30)
	askCounters(t, ds[0], counters, "inc")
	before := askCounters(t, ds[0], counters, "get")

	// The client: asks in a loop through a member that is not restarting. A member is told
	// to leave only once no ask is on its way through it (mu).
	var mu sync.RWMutex
	var through atomic.Pointer[daemon]
	through.Store(ds[0])
	var asks, failures atomic.Int64
	var failed sync.Map
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			mu.RLock()
			d := through.Load()
			out, errOut, code := shardctl("--data-dir", d.dir, "--cluster-key", clientKey.Load().(string), "ask", "counter", counters[i%len(counters)], "get")
			mu.RUnlock()
			asks.Add(1)
			if code != 0 {
				failures.Add(1)
				failed.Store(i, d.name+": "+strings.TrimSpace(out+errOut))
			}
		}
	}()

	for p := 1; p <= 3; p++ {
		for i, name := range names {
			old := ds[i]
			other := ds[(i+1)%len(ds)]
			mu.Lock()
			through.Store(other)
			mu.Unlock()
			if p == 2 {
				if out, errOut, code := shardctl("credential", "member", "--authority", newAuthKey, "--data-dir", old.dir, "--replace"); code != 0 {
					t.Fatalf("credential: %s %s", out, errOut)
				}
			}
			old.signal(syscall.SIGTERM)
			if code, ok := old.wait(60 * time.Second); !ok || code != 0 {
				t.Fatalf("phase %d: %s did not leave cleanly: exited=%v code=%d", p, name, ok, code)
			}
			ds[i] = start(name, phases[p], other)
			if !waitFor(30*time.Second, func() bool { return allAgree(ds, 3) }) {
				t.Fatalf("phase %d: %s did not rejoin:\n%s", p, name, ds[i].log.String())
			}
			// Asks go on between restarts (an event, not a count in a window of time).
			n := asks.Load()
			if !waitFor(30*time.Second, func() bool { return asks.Load() >= n+2 }) {
				t.Fatalf("phase %d: no ask made after %s restarted", p, name)
			}
			t.Logf("phase %d: %s restarted; %d asks so far, %d failed", p, name, asks.Load(), failures.Load())
		}
		if p == 1 { // every member accepts the new key now: the client moves to it
			clientKey.Store(newKey)
			for _, d := range ds {
				d.key = newKey
			}
		}
	}
	close(stop)
	<-done
	failed.Range(func(k, v any) bool {
		t.Errorf("ask %d failed: %v", k, v)
		return true
	})
	t.Logf("%d asks during the rotation, %d failed", asks.Load(), failures.Load())
	sameValues(t, before, askCounters(t, ds[2], counters, "get"))

	// The old key and authority are gone: a member with them is refused.
	stale := newCluster(t, "--entity-types", "counter", "--set", "sharding.number-of-shards=30", "--cluster-key", oldKey)
	stale.credentialMember("stale", oldAuthKey)
	d := stale.spawn("stale", "--join", ds[0].addr())
	if !waitFor(20*time.Second, func() bool { return strings.Contains(d.log.String(), "cannot reach seed") }) {
		t.Errorf("a member with the old key was not refused:\n%s", d.log.String())
	}
	// An admin with a credential of the new authority is an admin.
	if out, errOut, code := shardctl("credential", "admin", "--authority", newAuthKey, "--identity", adminKey); code != 0 {
		t.Fatalf("credential admin: %s %s", out, errOut)
	}
	for _, cmd := range []string{"pause", "resume"} { // one after the other: each waits for the members to follow it
		if r := ctlAll(ds[1].ctl("--identity", adminKey, "rebalance", cmd))[0]; r.code != 0 {
			t.Errorf("an admin of the new authority: %v", r)
		}
	}
}
