package remember

import (
	"slices"
	"time"

	"github.com/shardmesh/shardmesh/wire/pb"
)

// Anti-entropy: every AntiEntropyInterval (±25%) a replica sends its digest (one hash per
// bucket of the key space) to a random other member. That member answers with the
// summaries (key, version, tombstone, floor, value hash; no values) of its entries in the
// buckets that differ, as many buckets as fit one frame. The initiator compares them with
// its own entries of those buckets (reconcile); after settleDelay it reads the keys that
// differed again from both sides, in full, pushes what the peer still lacks or holds older
// (repair frames, merged there) and merges what it lacks itself. Tombstones travel like
// records.
//
// A round that moved records is followed by another soon (after catchUpDelay, or twice the
// round's duration if longer), so a member that was down catches up at the speed of the
// network rather than a frame per interval; a round that found only writes in flight waits
// the full interval. Listing a bucket costs what it holds, not the size of the store.
//
// Tombstones are never collected: dropping one safely needs every replica, including those
// down now, to have it, or anti-entropy would bring the deleted record back. Offline
// removal (Local.DeletePrefix on every member's directory) is the way to shed them.

// catchUpDelay is the pause between anti-entropy rounds while they find differences.
const catchUpDelay = 10 * time.Millisecond

// settleDelay is how long a round lets writes in flight land before it compares the keys
// whose summaries differed once more.
const settleDelay = 100 * time.Millisecond

// maxSummaries bounds the summaries of one answer (about a frame part's bytes).
const maxSummaries = partBytes / recordOverhead

// antiEntropy is the state of this replica's anti-entropy: when the next round starts, and
// the round in progress.
type antiEntropy struct {
	next  time.Time // when the next round starts (zero: a round is in progress)
	round *syncRound
}

// wake returns when anti-entropy next needs a Tick.
func (a *antiEntropy) wake() time.Time {
	if a.round != nil {
		if a.round.phase == syncSettling {
			return a.round.settleAt
		}
		return a.round.until
	}
	return a.next
}

// syncPhase is where a round is.
type syncPhase uint8

const (
	syncDigest   syncPhase = iota // the digest sent, waiting for the peer's summaries
	syncListing                   // listing the local entries of the differing buckets
	syncSettling                  // letting writes in flight land
	syncFetching                  // reading the differing keys from both sides
)

// syncRound is one anti-entropy round with a peer.
type syncRound struct {
	peer    NodeID
	req     uint64
	phase   syncPhase
	started time.Time
	until   time.Time

	remote             []entry  // the peer's summaries
	keys               []string // the keys that differed
	settleAt           time.Time
	theirs             map[string]entry
	ours               []entry
	gotTheirs, gotOurs bool

	// What refill needs of a round (machine_refill.go): the peer answered, refills
	// itself, holds peerKeys keys; the round covered every differing bucket; it pulled.
	answered, peerRefilling bool
	peerKeys                uint64
	covered                 bool
	pulled                  int
}

func (m *Machine) aeJitter() time.Duration {
	iv := m.cfg.AntiEntropyInterval
	if iv <= 0 {
		return 0
	}
	return iv*3/4 + time.Duration(m.rng.Int64N(int64(iv/2)+1))
}

// tickAntiEntropy starts a round when one is due, and moves a settling round on.
func (m *Machine) tickAntiEntropy() {
	if m.cfg.AntiEntropyInterval <= 0 {
		return
	}
	if r := m.ae.round; r != nil {
		if r.phase == syncSettling && !m.now.Before(r.settleAt) {
			m.fetchDiffering(r)
		}
		return
	}
	if m.now.Before(m.ae.next) {
		return
	}
	peers := m.replicaSet(withPlus)[1:]
	if len(peers) == 0 {
		m.ae.next = m.now.Add(m.aeJitter())
		return
	}
	peer := peers[m.rng.IntN(len(peers))]
	if m.rf.active {
		if p := m.refillPeer(peers); p != "" {
			peer = p
		}
	}
	r := &syncRound{peer: peer, started: m.now, until: m.now.Add(m.cfg.Timeout)}
	m.ae.round = r
	r.req = m.request(r)
	m.send(r.peer, &pb.ReplicaEnvelope{RequestId: r.req, Msg: &pb.ReplicaEnvelope_Digest{Digest: &pb.ReplicaDigest{Buckets: slices.Clone(m.dig.hash[:])}}})
}

func (r *syncRound) from(p NodeID) bool  { return p == r.peer }
func (r *syncRound) deadline() time.Time { return r.until }

// expire ends a round that took longer than the timeout.
func (r *syncRound) expire(m *Machine) { m.endSync(r, false) }

func (r *syncRound) answer(m *Machine, _ NodeID, env *pb.ReplicaEnvelope) {
	switch msg := env.Msg.(type) {
	case *pb.ReplicaEnvelope_Summaries:
		if r.phase != syncDigest {
			return
		}
		r.answered, r.peerRefilling, r.peerKeys = true, msg.Summaries.Refilling, msg.Summaries.Entries
		r.covered = len(msg.Summaries.Buckets) >= int(msg.Summaries.Differing)
		if len(msg.Summaries.Buckets) == 0 {
			m.endSync(r, false)
			return
		}
		m.stats.SyncRounds++
		r.remote = fromPBs(msg.Summaries.Records, true)
		m.observe(r.remote)
		buckets := make([]int, len(msg.Summaries.Buckets))
		for i, b := range msg.Summaries.Buckets {
			buckets[i] = int(b)
		}
		r.phase = syncListing
		m.diskOp(DiskOp{Kind: DiskBuckets, buckets: buckets}, func(res DiskResult) {
			if m.ae.round != r {
				return
			}
			if res.err != nil {
				m.endSync(r, false)
				return
			}
			local := make(map[string]entry, len(res.entries))
			for _, e := range res.entries {
				local[e.rec.Key] = e
			}
			push, pull := reconcile(local, r.remote)
			keys := append(push, pull...)
			slices.Sort(keys)
			r.keys = slices.Compact(keys)
			if len(r.keys) == 0 {
				m.endSync(r, false)
				return
			}
			// Writes in flight differ between replicas for a moment; under load most
			// differing buckets differ only by them. Let them land, then compare those
			// keys again, records in full, and act on what still differs.
			r.phase, r.settleAt = syncSettling, m.now.Add(settleDelay)
		})
	case *pb.ReplicaEnvelope_Records:
		if r.phase != syncFetching || r.gotTheirs {
			return
		}
		if msg.Records.Error != "" {
			m.endSync(r, false)
			return
		}
		for _, rec := range msg.Records.Records {
			e := fromPB(rec, false)
			r.theirs[e.rec.Key] = e
		}
		if msg.Records.Last {
			r.gotTheirs = true
			m.finishSync(r)
		}
	}
}

// fetchDiffering reads the keys that differed from the peer and from the local disk.
func (m *Machine) fetchDiffering(r *syncRound) {
	r.phase = syncFetching
	r.theirs = make(map[string]entry, len(r.keys))
	delete(m.pending, r.req)
	r.req = m.request(r) // the peer's answers to the read come under a new request id
	m.send(r.peer, &pb.ReplicaEnvelope{RequestId: r.req, Msg: &pb.ReplicaEnvelope_Read{Read: &pb.ReplicaRead{Keys: keyBytes(r.keys)}}})
	m.diskOp(DiskOp{Kind: DiskRead, keys: r.keys}, func(res DiskResult) {
		if m.ae.round != r {
			return
		}
		if res.err != nil {
			m.endSync(r, false)
			return
		}
		r.ours, r.gotOurs = res.entries, true
		m.finishSync(r)
	})
}

// finishSync, once both sides' records are in, pushes what the peer lacks and merges what
// this replica lacks.
func (m *Machine) finishSync(r *syncRound) {
	if !r.gotTheirs || !r.gotOurs {
		return
	}
	var toPush, toMerge []entry
	for i, key := range r.keys {
		theirs, ok := r.theirs[key]
		if !ok {
			theirs = entry{rec: Record{Key: key}}
		}
		push, pull := compareStates(&r.ours[i], &theirs)
		if push {
			toPush = append(toPush, r.ours[i])
		}
		if pull {
			toMerge = append(toMerge, theirs)
		}
	}
	if len(toPush) > 0 {
		m.repair(map[NodeID][]entry{r.peer: toPush})
	}
	r.pulled = len(toMerge)
	if len(toMerge) > 0 {
		m.observe(toMerge)
		m.apply(applyOp{kind: opMerge, recs: toMerge}, func(DiskResult) {})
	}
	m.endSync(r, len(toPush)+len(toMerge) > 0)
}

// endSync ends round r and sets when the next one starts: soon when it moved records
// (busy at most a third of the time: under a steady load of writes digests always differ a
// little), after the interval otherwise.
func (m *Machine) endSync(r *syncRound, moved bool) {
	if m.ae.round != r {
		return
	}
	delete(m.pending, r.req)
	m.ae.round = nil
	m.refillRound(r.peer, r.answered, r.peerRefilling, r.peerKeys, r.covered && r.pulled == 0)
	next := m.aeJitter()
	if moved || m.rf.active || m.rf.compare {
		next = min(next, max(catchUpDelay, 2*m.now.Sub(r.started)))
	}
	m.ae.next = m.now.Add(next)
}

// serveDigest answers a peer's digest with the summaries of the buckets that differ, as
// many whole buckets as fit one frame part (at least one).
func (m *Machine) serveDigest(from NodeID, req uint64, remote []uint64) {
	differing := m.dig.differing(remote)
	answer := func(buckets []uint32, recs []entry) {
		m.send(from, &pb.ReplicaEnvelope{RequestId: req,
			Msg: &pb.ReplicaEnvelope_Summaries{Summaries: &pb.ReplicaSummaries{Buckets: buckets, Records: toPBs(recs, true),
				Differing: uint32(len(differing)), Entries: m.dig.entries(), Refilling: m.rf.active}}})
	}
	if len(differing) == 0 {
		answer(nil, nil)
		return
	}
	picked := m.dig.pickBuckets(differing, maxSummaries)
	m.diskOp(DiskOp{Kind: DiskBuckets, buckets: picked}, func(res DiskResult) {
		if res.err != nil {
			return // the peer's round times out
		}
		byBucket := make(map[int][]entry, len(picked))
		for _, e := range res.entries {
			b := bucketOf(e.rec.Key)
			byBucket[b] = append(byBucket[b], e)
		}
		var buckets []uint32
		var recs []entry
		size := 0
		for _, b := range picked {
			n := 0
			for i := range byBucket[b] {
				n += recordSize(&byBucket[b][i])
			}
			if size+n > partBytes && len(buckets) > 0 {
				break
			}
			buckets = append(buckets, uint32(b))
			recs = append(recs, byBucket[b]...)
			size += n
		}
		answer(buckets, recs)
	})
}
