package remember

import (
	"math/rand/v2"
	"testing"
)

func rec(key string, epoch, counter uint64, writer, value string) entry {
	e := entry{rec: Record{Key: key, Version: Version{Epoch: epoch, Counter: counter, Writer: writer}}}
	if value != "" {
		e.rec.Value = []byte(value)
	}
	e.hash = valueHash(e.rec.Value, false)
	return e
}

func tomb(key string, epoch, counter uint64, writer string) entry {
	return entry{rec: Record{Key: key, Deleted: true, Version: Version{Epoch: epoch, Counter: counter, Writer: writer}}}
}

func TestVersionOrder(t *testing.T) {
	ordered := []Version{
		{},
		{Counter: 1, Writer: "a"},
		{Counter: 1, Writer: "b"},
		{Counter: 2, Writer: "a"},
		{Epoch: 1, Counter: 1, Writer: "a"}, // a higher epoch beats any counter
		{Epoch: 1, Counter: 9, Writer: "a"},
		{Epoch: 2, Counter: 1, Writer: "a"},
	}
	for i, a := range ordered {
		for j, b := range ordered {
			want := 0
			if i < j {
				want = -1
			} else if i > j {
				want = 1
			}
			if got := a.Compare(b); got != want {
				t.Errorf("%v.Compare(%v) = %d, want %d", a, b, got, want)
			}
		}
	}
}

// TestMergeRule: the merged record is the same whatever order replicas receive writes in,
// and floors merge by max.
func TestMergeRule(t *testing.T) {
	ins := []entry{
		rec("k", 0, 5, "b", "from b"),
		rec("k", 0, 5, "a", "from a"),
		rec("k", 1, 2, "a", "epoch 1"),
		tomb("k", 1, 2, "a"), // same version as the previous: the tombstone wins
		rec("k", 0, 9, "c", "high counter, epoch 0"),
		{rec: Record{Key: "k"}, floor: 7}, // a floor only
	}
	want := entry{rec: tomb("k", 1, 2, "a").rec, floor: 7}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 200 {
		order := rng.Perm(len(ins))
		cur := entry{rec: Record{Key: "k"}}
		for _, i := range order {
			cur = merge(cur, ins[i])
		}
		if !sameState(&cur, &want) {
			t.Fatalf("order %v merged to %+v, want %+v", order, cur, want)
		}
	}
	// Equal versions, different values (a reused counter): the larger hash wins both ways.
	a, b := rec("k", 0, 1, "a", "x"), rec("k", 0, 1, "a", "y")
	if ab, ba := merge(a, b), merge(b, a); !sameState(&ab, &ba) {
		t.Errorf("equal versions merge differently: %+v vs %+v", ab, ba)
	}
}

func TestApplyWriteFencing(t *testing.T) {
	cur := rec("k", 5, 10, "a", "v")
	if _, need, ok := applyWrite(cur, rec("k", 4, 11, "b", "old")); ok || need != 5 {
		t.Errorf("epoch below the record's: ok %v need %d", ok, need)
	}
	cur = raiseFloor(cur, 7)
	if _, need, ok := applyWrite(cur, rec("k", 6, 11, "b", "old")); ok || need != 7 {
		t.Errorf("epoch below the floor: ok %v need %d", ok, need)
	}
	next, _, ok := applyWrite(cur, rec("k", 7, 1, "b", "new"))
	if !ok || string(next.rec.Value) != "new" || next.floor != 7 {
		t.Errorf("epoch at the floor: ok %v, %+v", ok, next)
	}
	// Accepted but older than what the replica holds (a concurrent writer): no change.
	next2, _, ok := applyWrite(next, rec("k", 7, 0, "a", "lost"))
	if !ok || string(next2.rec.Value) != "new" {
		t.Errorf("older write of the same epoch: ok %v, %+v", ok, next2)
	}
	// A write carries no floor of its own.
	in := rec("k2", 3, 1, "a", "v")
	in.floor = 99
	if next, _, _ := applyWrite(entry{rec: Record{Key: "k2"}}, in); next.floor != 0 {
		t.Errorf("a write raised the floor to %d", next.floor)
	}
	if _, _, ok := applyWrite(raiseFloor(entry{rec: Record{Key: "k3"}}, 1), rec("k3", 0, 1, "a", "unfenced")); ok {
		t.Error("an unfenced write passed a floor")
	}
}

func TestDiskFormatRoundTrip(t *testing.T) {
	for _, e := range []entry{
		rec("k", 3, 99, "12D3KooWSomething", "value"),
		tomb("k", 0, 1, "w"),
		{rec: Record{Key: "k"}, floor: 12},
		rec("k", 1<<63, 1<<64-1, "", ""),
	} {
		b := encodeEntry(nil, &e)
		got, err := decodeEntry("k", b, true)
		if err != nil || !sameState(&got, &e) || string(got.rec.Value) != string(e.rec.Value) {
			t.Errorf("%+v: decoded %+v, %v", e, got, err)
		}
		for n := range len(b) - 8 { // cut anywhere before the value hash ends
			if _, err := decodeEntry("k", b[:n], true); err == nil {
				t.Errorf("%+v cut at %d decoded", e, n)
			}
		}
	}
}

// FuzzDecodeEntry: a stored entry that does not decode is an error, never a panic, and
// what decodes encodes back to the same bytes.
func FuzzDecodeEntry(f *testing.F) {
	for _, e := range []entry{rec("k", 3, 99, "w", "value"), tomb("k", 0, 1, "w"), {rec: Record{Key: "k"}, floor: 12}} {
		f.Add(encodeEntry(nil, &e))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		e, err := decodeEntry("k", b, true)
		if err != nil {
			return
		}
		again, err := decodeEntry("k", encodeEntry(nil, &e), true)
		if err != nil || !sameState(&e, &again) || string(e.rec.Value) != string(again.rec.Value) {
			t.Fatalf("%+v re-encoded into %+v (%v)", e, again, err)
		}
	})
}
