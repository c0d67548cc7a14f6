package e2e

import (
	"sync/atomic"
	"testing"
	"time"
)

// TestRollingUpdate restarts the three worker members of a cluster one after the other with
// --app-version 2 (a graceful shutdown each, the coordinator's member included) while a
// gateway member (a proxy: it runs no shards) sends a steady load of asks: no ask fails, and
// the shards end on version-2 members.
func TestRollingUpdate(t *testing.T) {
	if testing.Short() {
		t.Skip("long: four daemons, three graceful restarts under load")
	}
	keys := t.TempDir()
	adminKey, adminID := keygenAdmin(t, keys, "admin.key")
	c := newCluster(t, append(adminFlags(adminID), "--set", "sharding.role=worker", "--set", "sharding.rebalance-interval=1s")...)
	gw := c.start("gw", "--roles", "gateway")
	workers := []*daemon{c.start("w1", "--roles", "worker", "--app-version", "1", "--join", gw.addr()),
		c.start("w2", "--roles", "worker", "--app-version", "1", "--join", gw.addr()),
		c.start("w3", "--roles", "worker", "--app-version", "1", "--join", gw.addr())}
	all := append([]*daemon{gw}, workers...)
	if !waitFor(15*time.Second, func() bool { return allAgree(all, 4) }) {
		t.Fatal("cluster did not form")
	}
	cl := client(t, gw)
	var asked, failed atomic.Int64
	var firstErr atomic.Value
	stop := make(chan struct{})
	wg := load(cl, stop, &asked, &failed, &firstErr)
	time.Sleep(2 * time.Second)

	for i, w := range workers {
		r := ctlAll([]string{"shutdown", "--data-dir", w.dir, "--identity", adminKey, "--timeout", "60s"})[0]
		if r.code != 0 {
			t.Fatalf("shutdown of %s:\n%v", w.name, r)
		}
		if code, ok := w.wait(15 * time.Second); !ok || code != 0 {
			t.Fatalf("%s: exited=%v code=%d", w.name, ok, code)
		}
		workers[i] = c.start(w.name, "--roles", "worker", "--app-version", "2", "--join", gw.addr())
		all = append([]*daemon{gw}, workers...)
		if !waitFor(20*time.Second, func() bool { return allAgree(all, 4) }) {
			t.Fatalf("%s did not rejoin", w.name)
		}
		time.Sleep(2 * time.Second) // rebalance rounds under load
	}
	close(stop)
	wg.Wait()
	if failed.Load() > 0 {
		t.Fatalf("%d of %d asks failed during the rolling update; first: %v", failed.Load(), asked.Load(), firstErr.Load())
	}
	t.Logf("%d asks during the rolling update, none failed", asked.Load())
	homes := statsHomes(t, gw)
	if len(homes) == 0 {
		t.Fatal("no shard hosted")
	}
	ids := map[string]bool{}
	for _, w := range workers {
		ids[w.peerID()] = true
	}
	for s, n := range homes {
		if !ids[n] {
			t.Errorf("shard %s is on %s, not a version-2 worker", s, n)
		}
	}
	v, ok := gw.members()
	if !ok {
		t.Fatal("members")
	}
	_ = v
}
