package passivation

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/shardmesh/shardmesh/shard"
)

// benchActive is the number of active entities the benchmarks keep: a realistic shard.
const benchActive = 100_000

type benchPolicy struct {
	name     string
	settings Settings
}

// benchPolicies are the strategies whose bookkeeping cost is measured.
var benchPolicies = []benchPolicy{
	{"LRU", Limited(benchActive, LRU())},
	{"SLRU", Limited(benchActive, SegmentedLRU(0.2, 0.8))},
	{"MRU", Limited(benchActive, MRU())},
	{"LFU", Limited(benchActive, LFU(false))},
	{"LFUDA", Limited(benchActive, LFU(true))},
	{"WTinyLFU", DefaultStrategy().WithActiveEntityLimit(benchActive)},
	{"Idle", DefaultSettings()},
}

func entityIDs(n int) []shard.EntityID {
	ids := make([]shard.EntityID, n)
	for i := range ids {
		ids[i] = shard.EntityID(fmt.Sprintf("entity-%d", i))
	}
	return ids
}

// zipfSequence returns n indexes below bound drawn from a Zipf distribution (s = 1.1), from a
// fixed seed: few keys are hot, most are cold.
func zipfSequence(n, bound int, seed uint64) []int32 {
	z := rand.NewZipf(rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), 1.1, 1, uint64(bound-1))
	seq := make([]int32, n)
	for i := range seq {
		seq[i] = int32(z.Uint64())
	}
	return seq
}

// messageKeys returns the keys of an access sequence as a message stream would carry them:
// each a fresh copy of the id, laid out in arrival order (substrings of one string), so that
// the key's bytes are hot when the policy reads them, as they are after decoding a message.
// The policy's own copy of each id (made at activation) stays where it was allocated.
func messageKeys(ids []shard.EntityID, seq []int32) []shard.EntityID {
	var b strings.Builder
	for _, k := range seq {
		b.WriteString(string(ids[k]))
	}
	all := b.String()
	keys := make([]shard.EntityID, len(seq))
	off := 0
	for i, k := range seq {
		n := len(ids[k])
		keys[i] = shard.EntityID(all[off : off+n])
		off += n
	}
	return keys
}

// filledPolicy returns a policy holding size active entities and the keys that are active,
// in a random order so that hot keys are spread over the arena.
func filledPolicy(tb testing.TB, s Settings, size int) (*Policy[shard.EntityID], []shard.EntityID) {
	tb.Helper()
	if s.LimitEnabled() {
		s = s.WithActiveEntityLimit(size)
	}
	p, err := NewPolicy(s, StringHash[shard.EntityID])
	if err != nil {
		tb.Fatal(err)
	}
	ids := entityIDs(size)
	now := time.Unix(0, 0)
	var out []shard.EntityID
	for _, id := range ids {
		out = p.Access(id, now, out[:0])
	}
	active := ids[:0:0]
	for _, id := range ids {
		if p.Contains(id) {
			active = append(active, id)
		}
	}
	r := rand.New(rand.NewPCG(1, 2))
	r.Shuffle(len(active), func(i, j int) { active[i], active[j] = active[j], active[i] })
	return p, active
}

// BenchmarkAccessHit measures the bookkeeping of a message to an already active entity,
// with Zipf-distributed keys over 1,000 active entities (a shard's share of
// default-strategy's 100,000 with 100 shards per region: the policy's memory stays in the
// CPU caches) and over 100,000 (every access misses the caches on the stored key and entry,
// so the figure is mostly memory latency).
func BenchmarkAccessHit(b *testing.B) {
	for _, bp := range benchPolicies {
		for _, size := range []int{1000, benchActive} {
			b.Run(fmt.Sprintf("%s/%d", bp.name, size), func(b *testing.B) {
				p, active := filledPolicy(b, bp.settings, size)
				keys := messageKeys(active, zipfSequence(1<<20, len(active), 7))
				now := time.Unix(0, 0)
				var out []shard.EntityID
				b.ReportAllocs()
				n := 0
				for b.Loop() {
					out = p.Access(keys[n&(len(keys)-1)], now, out[:0])
					n++
				}
				if len(out) != 0 {
					b.Fatalf("a hit passivated %v", out)
				}
			})
		}
	}
}

// BenchmarkAccessZipf measures a realistic mix: Zipf-distributed keys over ten times more
// entities than the limit, so that some accesses activate an entity and passivate another.
func BenchmarkAccessZipf(b *testing.B) {
	ids := entityIDs(10 * benchActive)
	r := rand.New(rand.NewPCG(3, 4))
	r.Shuffle(len(ids), func(i, j int) { ids[i], ids[j] = ids[j], ids[i] })
	keys := messageKeys(ids, zipfSequence(1<<20, len(ids), 11))
	for _, bp := range benchPolicies {
		b.Run(bp.name, func(b *testing.B) {
			p, err := NewPolicy(bp.settings, StringHash[shard.EntityID])
			if err != nil {
				b.Fatal(err)
			}
			now := time.Unix(0, 0)
			var out []shard.EntityID
			for _, k := range keys { // warm up to the steady state
				out = p.Access(k, now, out[:0])
			}
			b.ReportAllocs()
			n := 0
			for b.Loop() {
				out = p.Access(keys[n&(len(keys)-1)], now, out[:0])
				n++
			}
		})
	}
}

// TestAccessHitDoesNotAllocate checks the promise of the hot path: a message to an active
// entity allocates nothing, for every policy.
func TestAccessHitDoesNotAllocate(t *testing.T) {
	policies := append(slices.Clone(benchPolicies),
		benchPolicy{"LRU+idle", Limited(benchActive, LRU()).WithIdleTimeout(time.Hour)},
		benchPolicy{"WTinyLFU+idle", DefaultStrategy().WithActiveEntityLimit(benchActive).WithIdleTimeout(time.Hour)},
	)
	for _, bp := range policies {
		t.Run(bp.name, func(t *testing.T) {
			s := bp.settings.WithActiveEntityLimit(2000)
			if !s.LimitEnabled() {
				s = bp.settings
			}
			p, err := NewPolicy(s, StringHash[shard.EntityID])
			if err != nil {
				t.Fatal(err)
			}
			ids := entityIDs(2000)
			now := time.Unix(0, 0)
			var out []shard.EntityID
			for range 3 { // several rounds: entities get promoted, the window adapts
				for _, id := range ids {
					out = p.Access(id, now, out[:0])
				}
			}
			var active []shard.EntityID
			for _, id := range ids {
				if p.Contains(id) {
					active = append(active, id)
				}
			}
			if len(active) < 1000 {
				t.Fatalf("only %d of 2000 entities active", len(active))
			}
			seq := zipfSequence(4096, len(active), 3)
			n := 0
			allocs := testing.AllocsPerRun(20_000, func() {
				now = now.Add(time.Millisecond)
				out = p.Access(active[seq[n%len(seq)]], now, out[:0])
				n++
			})
			if allocs != 0 {
				t.Fatalf("a hit allocates %v times", allocs)
			}
			if len(out) != 0 {
				t.Fatalf("a hit passivated %v", out)
			}
		})
	}
}
