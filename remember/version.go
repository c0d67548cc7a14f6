package remember

import (
	"bytes"
	"cmp"
	"fmt"
	"strings"
)

// Version orders the writes of one key: Epoch first (a fencing token: the shard allocation
// epoch of the writer, 0 when unfenced), then Counter (a Lamport clock of the store: max seen
// + 1), then Writer (the writing member's peer id) to break ties. The higher version wins on
// every replica: that is the merge rule (see newer).
type Version struct {
	Epoch, Counter uint64
	Writer         string
}

// IsZero reports whether v is no version at all: the key was never written.
func (v Version) IsZero() bool { return v.Epoch == 0 && v.Counter == 0 && v.Writer == "" }

// Compare returns -1, 0 or +1 as v orders before, the same as, or after o: by Epoch, then
// Counter, then Writer.
func (v Version) Compare(o Version) int {
	if c := cmp.Compare(v.Epoch, o.Epoch); c != 0 {
		return c
	}
	if c := cmp.Compare(v.Counter, o.Counter); c != 0 {
		return c
	}
	return strings.Compare(v.Writer, o.Writer)
}

// String formats v as epoch.counter@writer.
func (v Version) String() string {
	return fmt.Sprintf("%d.%d@%s", v.Epoch, v.Counter, v.Writer)
}

// Record is one key's value as the store holds it. Deleted marks a tombstone: the key was
// deleted by the write of Version, and Value is empty.
type Record struct {
	Key     string
	Value   []byte
	Version Version
	Deleted bool
}

// Write is one write of a Store.Write call: Value stored under Key, or with Delete a
// tombstone. Epoch fences it: a replica refuses it (ErrFenced) when Epoch is below the key's
// fence floor (see Store.GetFenced) or below the epoch of the record it holds. 0 is unfenced,
// and is then refused only by a key that a fenced writer already owns.
type Write struct {
	Key    string
	Value  []byte
	Delete bool
	Epoch  uint64
}

// entry is what a replica holds for a key: the record (a zero version: none, the key only
// has a fence floor), the key's fence floor, and the xxhash64 of the value (0 for a
// tombstone or no record), which stands for the value in digests and summaries.
type entry struct {
	rec   Record
	floor uint64
	hash  uint64
}

// absent reports whether e holds nothing: no record and no floor.
func (e *entry) absent() bool { return e.rec.Version.IsZero() && e.floor == 0 }

// newer reports whether the record of a wins over the record of b. This is the merge rule,
// the same on every replica, so that replicas that have seen the same writes hold the same
// record whatever order they saw them in:
//
//  1. the higher Version wins (Epoch, then Counter, then Writer);
//  2. for equal versions — which only a member that reused a counter can produce — a
//     tombstone wins over a value, then the larger value hash, then the larger value.
//
// Fence floors merge separately: the higher floor wins.
func newer(a, b *entry) bool {
	if c := a.rec.Version.Compare(b.rec.Version); c != 0 {
		return c > 0
	}
	if a.rec.Deleted != b.rec.Deleted {
		return a.rec.Deleted
	}
	if a.hash != b.hash {
		return a.hash > b.hash
	}
	return bytes.Compare(a.rec.Value, b.rec.Value) > 0
}

// merge returns what a replica holding cur holds after receiving in: the winning record
// and the higher floor. Records are never refused on merge (read repair and anti-entropy
// carry records some replica already accepted), so replicas converge.
func merge(cur, in entry) entry {
	out := cur
	if newer(&in, &cur) {
		out.rec, out.hash = in.rec, in.hash
	}
	out.floor = max(cur.floor, in.floor)
	return out
}

// sameState reports whether a and b hold the same record (by version, tombstone and value
// hash) and floor: the state digests compare.
func sameState(a, b *entry) bool {
	return a.rec.Version == b.rec.Version && a.rec.Deleted == b.rec.Deleted && a.hash == b.hash && a.floor == b.floor
}

// applyWrite returns what a replica holding cur holds after the fenced write in (a record
// with its version assigned by the writer). The write is refused — ok false, cur unchanged
// — when its epoch is below the key's floor or below the epoch of cur's record; need is then
// the lowest epoch the replica would accept. An accepted write merges like any record: if
// cur's record is newer (a concurrent writer's), the write is accepted but loses.
func applyWrite(cur, in entry) (next entry, need uint64, ok bool) {
	need = max(cur.floor, cur.rec.Version.Epoch)
	if in.rec.Version.Epoch < need {
		return cur, need, false
	}
	in.floor = 0
	return merge(cur, in), need, true
}

// raiseFloor returns cur with its fence floor raised to epoch (never lowered).
func raiseFloor(cur entry, epoch uint64) entry {
	cur.floor = max(cur.floor, epoch)
	return cur
}
