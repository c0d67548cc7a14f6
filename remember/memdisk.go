package remember

import (
	"slices"
	"strings"
)

// MemDisk is a replica's disk in memory, for the simulation and tests: what it holds is
// what a disk holds after its last fsync. The caller decides when an operation is carried
// out (Do), which is when it becomes durable: an operation a crash interrupts is either
// carried out or not (see the contract in disk.go), and the simulation draws which.
type MemDisk struct {
	entries map[string]entry
	changes uint64
}

// NewMemDisk returns an empty disk.
func NewMemDisk() *MemDisk { return &MemDisk{entries: map[string]entry{}} }

// Do carries op out at once.
func (d *MemDisk) Do(op DiskOp) DiskResult {
	switch op.Kind {
	case DiskApply:
		return applyMany([]DiskOp{op}, d.load, d.store, nil)[0]
	case DiskRead:
		out := make([]entry, len(op.keys))
		for i, k := range op.keys {
			out[i] = d.get(k)
		}
		return DiskResult{ID: op.ID, entries: out}
	case DiskScan:
		var out []entry
		for _, k := range d.sortedKeys() {
			if strings.HasPrefix(k, op.prefix) {
				out = append(out, d.entries[k])
			}
		}
		return DiskResult{ID: op.ID, entries: out}
	case DiskBuckets:
		var out []entry
		for _, k := range d.sortedKeys() {
			if slices.Contains(op.buckets, bucketOf(k)) {
				e := d.entries[k]
				e.rec.Value = nil // summaries: the hash stands for the value
				out = append(out, e)
			}
		}
		return DiskResult{ID: op.ID, entries: out}
	}
	return failed(op, errDiskClosed)
}

// State returns what a machine opening this disk starts from.
func (d *MemDisk) State() DiskState {
	var st DiskState
	var none entry
	for k, e := range d.entries {
		st.dig.update(k, &none, &e)
		st.maxCounter = max(st.maxCounter, e.rec.Version.Counter)
		st.entries++
	}
	return st
}

// Records returns every record the disk holds (tombstones included, floors only left
// out), sorted by key: what the simulation checks against what was acknowledged.
func (d *MemDisk) Records() []Record {
	var out []Record
	for _, k := range d.sortedKeys() {
		if e := d.entries[k]; !e.rec.Version.IsZero() {
			out = append(out, e.rec)
		}
	}
	return out
}

// Changes counts the entries this disk's applies changed: what it holds changed since a
// look at it when the count did.
func (d *MemDisk) Changes() uint64 { return d.changes }

// Floor returns key's fence floor on this disk.
func (d *MemDisk) Floor(key string) uint64 { return d.entries[key].floor }

func (d *MemDisk) get(k string) entry {
	if e, ok := d.entries[k]; ok {
		return e
	}
	return entry{rec: Record{Key: k}}
}

func (d *MemDisk) load(keys []string) (map[string]entry, error) {
	out := make(map[string]entry, len(keys))
	for _, k := range keys {
		out[k] = d.get(k)
	}
	return out, nil
}

func (d *MemDisk) store(cs []change) error {
	d.changes += uint64(len(cs))
	for _, c := range cs {
		if c.after.absent() {
			delete(d.entries, c.key)
			continue
		}
		d.entries[c.key] = c.after
	}
	return nil
}

func (d *MemDisk) sortedKeys() []string {
	keys := make([]string, 0, len(d.entries))
	for k := range d.entries {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// DiskState is what a Machine starts from: the digest of what its disk holds, the highest
// counter stored, and how many entries it holds.
type DiskState struct {
	dig        digest
	maxCounter uint64
	entries    int
}

// Entries is how many entries the disk holds.
func (s *DiskState) Entries() int { return s.entries }
