package remember

import (
	"errors"
	"slices"
)

// A replica's disk, as the Machine sees it: it asks for disk operations (DiskOp) in its
// Ready, and is told their results (DiskResult) through DiskDone. What is decided about
// the stored entries — fencing, the merge rule — is decided here, by applyOps, on whatever
// disk carries the operations out: Badger in production (badgerDisk), memory in the
// simulation and tests (MemDisk).
//
// The contract every disk keeps:
//
//   - Apply operations (writes, merges, fences) are carried out one at a time, in the order
//     asked for, and each is durable before its result is reported: a fence raised before a
//     write refuses it, and a write stored before a fence is in what the fence returns. A
//     disk may carry several queued applies out in one commit (one fsync).
//   - Reads, scans and bucket listings see every apply whose result was reported before they
//     were asked for; they may run beside applies.
//   - A crash loses applies whose result was not reported, all of them or some (a
//     commit larger than one transaction may land in part); never one that was reported.

// DiskKind says what a DiskOp does.
type DiskKind uint8

// Kinds of disk operations.
const (
	DiskApply   DiskKind = iota + 1 // writes, merges and fences, in order; durable before done
	DiskRead                        // entries of keys
	DiskScan                        // entries under a prefix (values included)
	DiskBuckets                     // summaries of the entries of anti-entropy buckets
)

func (k DiskKind) String() string {
	switch k {
	case DiskApply:
		return "apply"
	case DiskRead:
		return "read"
	case DiskScan:
		return "scan"
	case DiskBuckets:
		return "buckets"
	}
	return "unknown"
}

// DiskOp is one operation the Machine asks of its replica's disk. Carry it out with the
// disk (badgerDisk, MemDisk) and give the result to Machine.DiskDone.
type DiskOp struct {
	ID   uint64
	Kind DiskKind

	apply   []applyOp // DiskApply
	keys    []string  // DiskRead
	prefix  string    // DiskScan
	buckets []int     // DiskBuckets
}

// DiskResult is the outcome of a DiskOp.
type DiskResult struct {
	ID uint64

	applied []applyResult // DiskApply: one per applyOp
	changes []change      // DiskApply: the entries that changed, for the digest
	entries []entry       // DiskRead (one per key, absent ones included), DiskScan, DiskBuckets
	err     error         // nothing of the operation is known to be done
}

// Err is the error of a failed operation (nil when it succeeded).
func (r DiskResult) Err() error { return r.err }

// failed returns the result of op failing with err.
func failed(op DiskOp, err error) DiskResult { return DiskResult{ID: op.ID, err: err} }

// Failed returns the result of op failing with err, nothing of it done (the simulation's
// disk faults).
func (op DiskOp) Failed(err error) DiskResult { return failed(op, err) }

// opKind says what an applyOp does to the local replica.
type opKind uint8

const (
	opWrite opKind = iota + 1 // fenced writes (from this member's Write or a peer's)
	opMerge                   // records to merge (read repair, anti-entropy)
	opFence                   // raise fence floors and read the entries
)

// applyOp is one operation of a DiskApply.
type applyOp struct {
	kind   opKind
	recs   []entry  // opWrite, opMerge
	keys   []string // opFence
	fences []uint64 // opFence, as long as keys
}

func (op *applyOp) size() int { return len(op.recs) + len(op.keys) }

// applyResult is the outcome of an applyOp.
type applyResult struct {
	refused []refusal // opWrite: the writes refused for fencing
	entries []entry   // opFence: the keys' entries after raising their floors
	changed int       // opMerge: how many entries changed
}

// refusal is a write refused for fencing: its index in the operation, and the lowest epoch
// the replica accepts for its key.
type refusal struct {
	index int
	need  uint64
}

// change is an entry that an apply changed: what it held before and holds now.
type change struct {
	key           string
	before, after entry
}

// applyKeys returns every key the operations touch, each once, in order of first use.
func applyKeys(ops []applyOp) []string {
	seen := make(map[string]bool)
	var keys []string
	add := func(k string) {
		if !seen[k] {
			seen[k] = true
			keys = append(keys, k)
		}
	}
	for i := range ops {
		for j := range ops[i].recs {
			add(ops[i].recs[j].rec.Key)
		}
		for _, k := range ops[i].keys {
			add(k)
		}
	}
	return keys
}

// applyOps decides what ops do to entries that held before (every key of applyKeys, absent
// ones included): the results of each op, and the entries that change, in key order. It is
// the replica's only decision about what it stores — fencing (applyWrite), the merge rule
// (merge) and floors (raiseFloor) — and is the same on every disk.
func applyOps(ops []applyOp, before map[string]entry) ([]applyResult, []change) {
	after := make(map[string]entry, len(before))
	for k, e := range before {
		after[k] = e
	}
	results := make([]applyResult, len(ops))
	for i := range ops {
		op, res := &ops[i], &results[i]
		switch op.kind {
		case opWrite:
			for j := range op.recs {
				in := &op.recs[j]
				next, need, ok := applyWrite(after[in.rec.Key], *in)
				if !ok {
					res.refused = append(res.refused, refusal{index: j, need: need})
					continue
				}
				after[in.rec.Key] = next
			}
		case opMerge:
			for j := range op.recs {
				in := &op.recs[j]
				cur := after[in.rec.Key]
				next := merge(cur, *in)
				if !sameState(&cur, &next) {
					res.changed++
				}
				after[in.rec.Key] = next
			}
		case opFence:
			res.entries = make([]entry, len(op.keys))
			for j, key := range op.keys {
				next := raiseFloor(after[key], op.fences[j])
				after[key] = next
				res.entries[j] = next
			}
		}
	}
	var changes []change
	for key, next := range after {
		old := before[key]
		if sameState(&old, &next) && string(old.rec.Value) == string(next.rec.Value) {
			continue
		}
		changes = append(changes, change{key: key, before: old, after: next})
	}
	slices.SortFunc(changes, func(a, b change) int {
		switch {
		case a.key < b.key:
			return -1
		case a.key > b.key:
			return 1
		}
		return 0
	})
	return results, changes
}

// applyMany runs the DiskApply operations ops as one commit: entries are loaded, the
// decisions taken, and store writes what changed; each op gets its share of the results.
// This is the group commit both disks share. When store fails, part of the commit may be
// on disk all the same: reread, when set, returns the changes that did land (given those
// that were meant to), and the first op's result carries them for the digest.
func applyMany(ops []DiskOp, load func(keys []string) (map[string]entry, error), store func([]change) error,
	reread func([]change) []change) []DiskResult {
	var all []applyOp
	for _, op := range ops {
		all = append(all, op.apply...)
	}
	out := make([]DiskResult, len(ops))
	before, err := load(applyKeys(all))
	var landed []change
	if err == nil {
		results, changes := applyOps(all, before)
		if err = store(changes); err == nil {
			i := 0
			for k, op := range ops {
				out[k] = DiskResult{ID: op.ID, applied: results[i : i+len(op.apply)]}
				i += len(op.apply)
			}
			// The digest learns of every change once, from the first op's result.
			out[0].changes = changes
			return out
		}
		if reread != nil {
			landed = reread(changes)
		}
	}
	for k, op := range ops {
		out[k] = failed(op, err)
	}
	out[0].changes = landed
	return out
}

// errDiskClosed is a disk operation asked of a disk that closed.
var errDiskClosed = errors.New("disk closed")
