package remember

import (
	"encoding/binary"

	"github.com/cespare/xxhash/v2"
)

// numBuckets is how many buckets anti-entropy splits the key space into (by a hash of the
// key). A digest is one uint64 per bucket (8 KiB); a differing bucket costs the summaries of
// its keys, about 1/numBuckets of the store.
const numBuckets = 1024

// bucketOf returns key's bucket.
func bucketOf(key string) int { return int(xxhash.Sum64String(key) & (numBuckets - 1)) }

// valueHash is the hash that stands for a value in digests and summaries; 0 for a tombstone.
func valueHash(value []byte, deleted bool) uint64 {
	if deleted {
		return 0
	}
	return xxhash.Sum64(value)
}

// stateHash hashes everything about key's entry that replicas must agree on: the record's
// version, tombstone flag and value hash, and the floor. An absent entry hashes to 0, so a
// bucket's digest (the XOR of its keys' state hashes) does not depend on keys that are not
// there.
func stateHash(key string, e *entry) uint64 {
	if e.absent() {
		return 0
	}
	var b [57]byte
	binary.LittleEndian.PutUint64(b[0:], xxhash.Sum64String(key))
	binary.LittleEndian.PutUint64(b[8:], e.rec.Version.Epoch)
	binary.LittleEndian.PutUint64(b[16:], e.rec.Version.Counter)
	binary.LittleEndian.PutUint64(b[24:], xxhash.Sum64String(e.rec.Version.Writer))
	binary.LittleEndian.PutUint64(b[32:], e.floor)
	binary.LittleEndian.PutUint64(b[40:], e.hash)
	if e.rec.Deleted {
		b[56] = 1
	}
	return xxhash.Sum64(b[:])
}

// digest summarises a replica's state per bucket: the XOR of the state hashes of the
// bucket's keys, and how many keys it holds. Two replicas holding the same entries have
// the same digest; a differing bucket names where they differ.
type digest struct {
	hash  [numBuckets]uint64
	count [numBuckets]int
}

// update accounts for key's entry changing from old to next.
func (d *digest) update(key string, old, next *entry) {
	b := bucketOf(key)
	d.hash[b] ^= stateHash(key, old) ^ stateHash(key, next)
	switch {
	case old.absent() && !next.absent():
		d.count[b]++
	case !old.absent() && next.absent():
		d.count[b]--
	}
}

// entries is how many keys the digest counts.
func (d *digest) entries() uint64 {
	n := 0
	for _, c := range d.count {
		n += c
	}
	return uint64(n)
}

// differing returns the buckets where remote (a peer's digest) differs from d, in order. A
// remote digest of another size differs everywhere and yields nil.
func (d *digest) differing(remote []uint64) []int {
	if len(remote) != numBuckets {
		return nil
	}
	var out []int
	for i, h := range remote {
		if d.hash[i] != h {
			out = append(out, i)
		}
	}
	return out
}

// pickBuckets returns the first of the differing buckets whose key counts (local counts, an
// estimate of the peer's) add up to at most budget keys, and at least one bucket.
func (d *digest) pickBuckets(differing []int, budget int) []int {
	n := 0
	for i, b := range differing {
		n += d.count[b]
		if n > budget && i > 0 {
			return differing[:i]
		}
	}
	return differing
}

// reconcile compares a replica's entries of some buckets (local, by key) with a peer's
// summaries of the same buckets (remote: records without values, with their value hash) and
// returns the keys to push to the peer (ours wins or the peer lacks it, or our floor is
// higher) and the keys to pull from it (the reverse). A key can be in both: our record
// wins and the peer's floor is higher.
func reconcile(local map[string]entry, remote []entry) (push, pull []string) {
	seen := make(map[string]bool, len(remote))
	for i := range remote {
		r := &remote[i]
		key := r.rec.Key
		seen[key] = true
		l := local[key]
		p, q := compareStates(&l, r)
		if p {
			push = append(push, key)
		}
		if q {
			pull = append(pull, key)
		}
	}
	for key, l := range local {
		if !seen[key] && !l.absent() {
			push = append(push, key)
		}
	}
	return push, pull
}

// compareStates says whether the peer needs our entry l (push) and whether we need its entry
// r (pull), r being a summary.
func compareStates(l, r *entry) (push, pull bool) {
	sameRecord := l.rec.Version == r.rec.Version && l.rec.Deleted == r.rec.Deleted && l.hash == r.hash
	if !sameRecord {
		if newer(l, r) {
			push = true
		} else {
			pull = true
		}
	}
	switch {
	case l.floor > r.floor:
		push = true
	case r.floor > l.floor:
		pull = true
	}
	return push, pull
}
