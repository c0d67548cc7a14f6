package shardmesh_test

import (
	"context"
	"fmt"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shardmesh/shardmesh"
	"github.com/shardmesh/shardmesh/passivation"
)

// sink counts what it receives.
type sink struct{ n *atomic.Int64 }

func (s sink) Receive(*shardmesh.Context, int) (int, error) { s.n.Add(1); return 0, nil }

func sinkType(n *atomic.Int64) shardmesh.Entity[int, int] {
	return shardmesh.Entity[int, int]{
		Key:          shardmesh.NewEntityTypeKey[int, int]("sink"),
		New:          func(*shardmesh.Context) shardmesh.Behavior[int, int] { return sink{n} },
		MessageCodec: shardmesh.JSONCodec[int]{},
		ReplyCodec:   shardmesh.JSONCodec[int]{},
	}
}

// BenchmarkChannelBaseline: a buffered channel, one producer, one consumer — the raw figure
// local Tell is compared with.
func BenchmarkChannelBaseline(b *testing.B) {
	ch := make(chan int, 1024)
	done := make(chan struct{})
	go func() {
		for range ch {
		}
		close(done)
	}()
	b.ResetTimer()
	for i := range b.N {
		ch <- i
	}
	close(ch)
	<-done
}

// BenchmarkLocalTell: Tell through region → shard → entity on one member, to 1,000 entities,
// until every message is handled; with the default idle passivation (every message touches
// the entity's idle entry), with Window-TinyLFU under a limit that never binds, and with
// none.
func BenchmarkLocalTell(b *testing.B) {
	for _, c := range []struct {
		name string
		pass passivation.Settings
	}{
		{"idle", passivation.DefaultSettings()},
		{"w-tinylfu", passivation.DefaultStrategy()},
		{"none", passivation.Disabled()},
	} {
		b.Run(c.name, func(b *testing.B) { benchLocalTell(b, c.pass) })
	}
}

func benchLocalTell(b *testing.B, pass passivation.Settings) {
	var n atomic.Int64
	sys := benchSystem(b)
	e := sinkType(&n)
	e.Passivation = &pass
	r, err := shardmesh.Init(sys, e)
	if err != nil {
		b.Fatal(err)
	}
	refs := make([]shardmesh.EntityRef[int, int], 1000)
	for i := range refs {
		refs[i] = r.EntityRefFor("e" + strconv.Itoa(i))
		if _, err := refs[i].Ask(context.Background(), 0); err != nil { // warm: shards allocated, entities started
			b.Fatal(err)
		}
	}
	n.Store(0)
	b.ResetTimer()
	for i := range b.N {
		if err := refs[i%len(refs)].Tell(i); err != nil {
			b.Fatal(err)
		}
	}
	for n.Load() < int64(b.N) {
		time.Sleep(50 * time.Microsecond)
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
}

func benchSystem(b *testing.B) *shardmesh.System {
	b.Helper()
	return startMembers(b, 1)[0]
}

var _ = fmt.Sprint
