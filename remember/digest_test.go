package remember

import (
	"fmt"
	"slices"
	"testing"
)

// replicaState is a pure in-memory replica for digest tests.
type replicaState struct {
	entries map[string]entry
	dig     digest
}

func newReplicaState() *replicaState { return &replicaState{entries: map[string]entry{}} }

func (r *replicaState) merge(in entry) {
	old, ok := r.entries[in.rec.Key]
	if !ok {
		old = entry{rec: Record{Key: in.rec.Key}}
	}
	next := merge(old, in)
	r.dig.update(in.rec.Key, &old, &next)
	r.entries[in.rec.Key] = next
}

// inBuckets returns r's entries in buckets, and the summaries (no values) of them.
func (r *replicaState) inBuckets(buckets []int) (map[string]entry, []entry) {
	full := map[string]entry{}
	var sums []entry
	for k, e := range r.entries {
		if slices.Contains(buckets, bucketOf(k)) {
			full[k] = e
			s := e
			s.rec.Value = nil
			sums = append(sums, s)
		}
	}
	return full, sums
}

// syncOnce is one anti-entropy round of a with b, as the store runs it, without a network.
func syncOnce(a, b *replicaState, budget int) bool {
	diff := b.dig.differing(a.dig.hash[:])
	if len(diff) == 0 {
		return false
	}
	picked := b.dig.pickBuckets(diff, budget)
	_, remote := b.inBuckets(picked)
	local, _ := a.inBuckets(picked)
	push, pull := reconcile(local, remote)
	for _, k := range push {
		b.merge(a.entries[k])
	}
	for _, k := range pull {
		a.merge(b.entries[k])
	}
	return true
}

func TestDigestConvergence(t *testing.T) {
	a, b := newReplicaState(), newReplicaState()
	for i := range 5000 {
		k := fmt.Sprintf("key-%d", i)
		switch i % 5 {
		case 0: // only a
			a.merge(rec(k, 0, uint64(i+1), "a", "va"))
		case 1: // only b, a tombstone
			b.merge(tomb(k, 0, uint64(i+1), "b"))
		case 2: // both, b newer
			a.merge(rec(k, 0, 1, "a", "old"))
			b.merge(rec(k, 0, 2, "b", "new"))
		case 3: // both, same
			a.merge(rec(k, 1, 1, "a", "same"))
			b.merge(rec(k, 1, 1, "a", "same"))
		case 4: // same record, a higher floor on a
			a.merge(rec(k, 1, 1, "a", "same"))
			b.merge(rec(k, 1, 1, "a", "same"))
			a.merge(entry{rec: Record{Key: k}, floor: 3})
		}
	}
	if a.dig == b.dig {
		t.Fatal("different replicas have the same digest")
	}
	rounds := 0
	for syncOnce(a, b, 500) {
		rounds++
		if rounds > 100 {
			t.Fatal("no convergence after 100 rounds")
		}
	}
	if a.dig != b.dig || len(a.entries) != len(b.entries) {
		t.Fatalf("after %d rounds: digests equal %v, %d vs %d entries", rounds, a.dig == b.dig, len(a.entries), len(b.entries))
	}
	for k, e := range a.entries {
		o := b.entries[k]
		if !sameState(&e, &o) {
			t.Fatalf("%s: %+v vs %+v", k, e, o)
		}
	}
	if rounds < 2 {
		t.Errorf("the budget of 500 keys should take several rounds, took %d", rounds)
	}
	t.Logf("converged in %d rounds", rounds)
}

func TestDigestIgnoresAbsentAndCounts(t *testing.T) {
	var d digest
	none := entry{rec: Record{Key: "k"}}
	e := rec("k", 0, 1, "a", "v")
	d.update("k", &none, &e)
	if d.count[bucketOf("k")] != 1 {
		t.Errorf("count %d", d.count[bucketOf("k")])
	}
	d.update("k", &e, &none)
	if d != (digest{}) {
		t.Error("removing the only entry leaves a non-zero digest")
	}
	if got := d.differing(make([]uint64, 3)); got != nil {
		t.Errorf("a digest of another size: %v", got)
	}
}
