package node

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shardmesh/shardmesh/remember"
)

// TestPrefetchedStateIsTakenOnceByItsIncarnation: an early read is started only for a type
// whose incarnations load their state, taken once, only by an incarnation of the epoch it
// was read for, and dropped by a save of the key, a removal of the type's data, or its TTL.
func TestPrefetchedStateIsTakenOnceByItsIncarnation(t *testing.T) {
	var reads atomic.Int64
	read := func(key string, _ uint64) (remember.Record, bool, error) {
		reads.Add(1)
		return remember.Record{Key: key, Value: []byte("v")}, true, nil
	}
	var p statePrefetches
	now := time.Unix(1000, 0)
	want := []StatePrefetch{{Type: "counter", Key: "st/counter/1/a", Epoch: 7}}

	p.start(now, want, read)
	if p.take("st/counter/1/a", 7) != nil || reads.Load() != 0 {
		t.Fatal("a state read early for a type that never loaded one")
	}
	p.markLoads("counter")
	p.start(now, want, read)
	if got := p.take("st/counter/1/a", 8); got != nil {
		t.Fatal("taken by an incarnation of another epoch")
	}
	p.start(now, want, read)
	ps := p.take("st/counter/1/a", 7)
	if ps == nil || !ps.wait(context.Background()) || string(ps.rec.Value) != "v" || !ps.found {
		t.Fatalf("not taken by its incarnation: %+v", ps)
	}
	if p.take("st/counter/1/a", 7) != nil {
		t.Fatal("taken twice")
	}

	p.start(now, want, read)
	p.invalidate("st/counter/1/a")
	if p.take("st/counter/1/a", 7) != nil {
		t.Fatal("taken after a save of its key")
	}
	p.start(now, want, read)
	p.invalidatePrefix("st/counter/")
	if p.take("st/counter/1/a", 7) != nil {
		t.Fatal("taken after its type's data was removed")
	}
	p.start(now, want, read)
	p.start(now.Add(prefetchTTL+time.Second), []StatePrefetch{{Type: "counter", Key: "st/counter/1/b", Epoch: 7}}, read)
	if p.take("st/counter/1/a", 7) != nil {
		t.Fatal("taken after its TTL")
	}

	failing := func(string, uint64) (remember.Record, bool, error) {
		return remember.Record{}, false, errors.New("no quorum")
	}
	p.start(now, want, failing)
	if ps := p.take("st/counter/1/a", 7); ps == nil || !ps.wait(context.Background()) || ps.err == nil {
		t.Fatal("a failed read not reported as failed")
	}
}
