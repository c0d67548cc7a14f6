package remember

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/shardmesh/shardmesh/wire"
	"github.com/shardmesh/shardmesh/wire/pb"
)

// Anti-entropy: every Config.AntiEntropyInterval (±25%) a replica sends its digest (one
// hash per bucket of the key space) to a random other member. That member answers with the
// summaries (key, version, tombstone, floor, value hash; no values) of its entries in the
// buckets that differ, as many buckets as fit one frame. The initiator compares them with
// its own entries of those buckets (reconcile); after settleDelay it reads the keys that
// differed again from both sides, in full, pushes what the peer still lacks or holds older
// (repair frames, merged there) and merges what it lacks itself. Tombstones travel like
// records.
//
// A round that moved records is followed by another soon (after catchUpDelay, or twice the
// round's duration if longer), so a member that was down catches up at the speed of the
// network rather than a frame per interval; a round that found only writes in flight
// waits the full interval. Listing a bucket is a prefix scan of the summary index (see
// indexPrefix), so a round costs what differs, not the size of the store.
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

func (s *Store) runAntiEntropy() {
	interval := s.cfg.AntiEntropyInterval
	jitter := func() time.Duration { return interval*3/4 + rand.N(interval/2+1) }
	t := time.NewTimer(jitter())
	defer t.Stop()
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-t.C:
		}
		next := jitter()
		if p := s.randomPeer(); p != "" {
			start := time.Now()
			differed, err := s.syncWith(p)
			switch {
			case err != nil && s.ctx.Err() == nil:
				s.log.Debug("anti-entropy round failed", "peer", p, "err", err)
			case differed:
				// Again soon, but busy at most a third of the time: under a steady load
				// of writes digests always differ a little (writes in flight).
				next = min(next, max(catchUpDelay, 2*time.Since(start)))
			}
		}
		t.Reset(next)
	}
}

// randomPeer returns a random other member, or "" when there is none.
func (s *Store) randomPeer() peer.ID {
	ms := s.members()[1:]
	if len(ms) == 0 {
		return ""
	}
	return ms[rand.N(len(ms))]
}

// syncWith runs one anti-entropy round with p and reports whether their states differed.
func (s *Store) syncWith(p peer.ID) (bool, error) {
	r, err := s.syncRound(p)
	return r.differed, err
}

// syncResult is what an anti-entropy round found.
type syncResult struct {
	differed  bool   // records moved, one way or the other
	pulled    int    // records merged here from the peer
	buckets   int    // buckets compared
	differing int    // buckets that differed (more than compared when they did not fit a frame)
	entries   uint64 // keys the peer holds
	refilling bool   // the peer is refilling itself (refill.go)
}

// syncRound runs one anti-entropy round with p.
func (s *Store) syncRound(p peer.ID) (syncResult, error) {
	var res syncResult
	ctx, cancel := context.WithTimeout(s.ctx, s.cfg.Timeout)
	defer cancel()
	d := s.com.digestSnapshot()
	var sum *pb.ReplicaSummaries
	err := s.ask(ctx, p, &pb.ReplicaEnvelope{Msg: &pb.ReplicaEnvelope_Digest{Digest: &pb.ReplicaDigest{Buckets: d.hash[:]}}},
		func(env *pb.ReplicaEnvelope) (bool, error) {
			m, ok := env.Msg.(*pb.ReplicaEnvelope_Summaries)
			if !ok {
				return false, fmt.Errorf("answer to a digest is %T", env.Msg)
			}
			sum = m.Summaries
			return true, nil
		})
	if err != nil {
		return res, err
	}
	res.buckets, res.differing, res.entries, res.refilling = len(sum.Buckets), int(sum.Differing), sum.Entries, sum.Refilling
	if len(sum.Buckets) == 0 {
		return res, nil
	}
	s.stats.syncRounds.Add(1)
	remote := fromPBs(sum.Records, true)
	s.observe(remote)
	local := make(map[string]entry)
	for _, b := range sum.Buckets {
		err := iterateBucket(s.db, int(b), func(e *entry) error {
			local[e.rec.Key] = *e
			return nil
		})
		if err != nil {
			res.differed = true
			return res, fmt.Errorf("remember: read %s: %w", s.cfg.Dir, err)
		}
	}
	push, pull := reconcile(local, remote)
	keys := append(push, pull...)
	slices.Sort(keys)
	keys = slices.Compact(keys)
	if len(keys) == 0 {
		return res, nil
	}
	// Writes in flight differ between replicas for a moment; under load most differing
	// buckets differ only by them. Let them land, then compare those keys again, records
	// in full, and act on what still differs.
	select {
	case <-time.After(settleDelay):
	case <-ctx.Done():
		return res, ctx.Err()
	}
	theirs, err := s.fetch(ctx, p, keys)
	if err != nil {
		return res, err
	}
	ours, err := readEntries(s.db, keys)
	if err != nil {
		return res, fmt.Errorf("remember: read %s: %w", s.cfg.Dir, err)
	}
	var toPush, toMerge []entry
	for i, key := range keys {
		r, ok := theirs[key]
		if !ok {
			r = entry{rec: Record{Key: key}}
		}
		push, pull := compareStates(&ours[i], &r)
		if push {
			toPush = append(toPush, ours[i])
		}
		if pull {
			toMerge = append(toMerge, r)
		}
	}
	if len(toPush) > 0 {
		s.repair(map[peer.ID][]entry{p: toPush})
	}
	res.differed, res.pulled = len(toPush)+len(toMerge) > 0, len(toMerge)
	if len(toMerge) > 0 {
		if err := s.mergeLocal(ctx, toMerge); err != nil {
			return res, err
		}
	}
	s.log.Debug("anti-entropy round", "peer", p, "buckets", len(sum.Buckets), "candidates", len(keys), "pushed", len(toPush), "pulled", len(toMerge))
	return res, nil
}

// fetch reads keys' entries from p (those it holds).
func (s *Store) fetch(ctx context.Context, p peer.ID, keys []string) (map[string]entry, error) {
	got := make(map[string]entry, len(keys))
	err := s.ask(ctx, p, &pb.ReplicaEnvelope{Msg: &pb.ReplicaEnvelope_Read{Read: &pb.ReplicaRead{Keys: keyBytes(keys)}}},
		func(env *pb.ReplicaEnvelope) (bool, error) {
			m, ok := env.Msg.(*pb.ReplicaEnvelope_Records)
			if !ok {
				return false, fmt.Errorf("answer to a read is %T", env.Msg)
			}
			if m.Records.Error != "" {
				return true, fmt.Errorf("replica %s: %s", p, m.Records.Error)
			}
			for _, r := range m.Records.Records {
				e := fromPB(r, false)
				got[e.rec.Key] = e
			}
			return m.Records.Last, nil
		})
	if err != nil {
		return nil, err
	}
	return got, nil
}

// mergeLocal merges entries into this replica and waits until they are on disk.
func (s *Store) mergeLocal(ctx context.Context, es []entry) error {
	s.observe(es)
	done := make(chan error, 1)
	if !s.com.submit(&applyOp{kind: opMerge, recs: es, done: func(res applyResult) { done <- res.err }}) {
		return ErrClosed
	}
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// serveDigest answers a peer's digest with the summaries of the buckets that differ.
func (s *Store) serveDigest(from peer.ID, id uint64, remote []uint64) {
	d := s.com.digestSnapshot()
	if len(remote) != numBuckets {
		s.log.Warn("anti-entropy digest with another bucket count; is the peer another release?", "peer", from, "buckets", len(remote), "want", numBuckets)
	}
	differing := d.differing(remote)
	answer := func(buckets []uint32, recs []entry) {
		s.out.send(from, wire.AppendReplica(nil, &pb.ReplicaEnvelope{RequestId: id,
			Msg: &pb.ReplicaEnvelope_Summaries{Summaries: &pb.ReplicaSummaries{Buckets: buckets, Records: toPBs(recs, true),
				Differing: uint32(len(differing)), Entries: d.entries(), Refilling: s.refill.active.Load()}}}))
	}
	if len(differing) == 0 {
		answer(nil, nil)
		return
	}
	picked := d.pickBuckets(differing, maxSummaries)
	s.spawn(func() {
		// Whole buckets only, in order, as many as fit a frame part (at least one).
		var buckets []uint32
		var recs []entry
		size := 0
		for _, b := range picked {
			n, first := 0, len(recs)
			err := iterateBucket(s.db, b, func(e *entry) error {
				recs = append(recs, *e)
				n += recordSize(e)
				return nil
			})
			if err != nil {
				s.log.Error("anti-entropy: cannot read the store", "dir", s.cfg.Dir, "err", err)
				return
			}
			if size+n > partBytes && len(buckets) > 0 {
				recs = recs[:first]
				break
			}
			buckets = append(buckets, uint32(b))
			size += n
		}
		answer(buckets, recs)
	})
}

// errAnswer: an answer that does not fit the request.
var errAnswer = errors.New("unexpected answer")

// ask sends env to p as a request and passes p's answers to handle until it reports done
// (or an error), ctx ends or the store closes.
func (s *Store) ask(ctx context.Context, p peer.ID, env *pb.ReplicaEnvelope, handle func(*pb.ReplicaEnvelope) (done bool, err error)) error {
	c := &chanCall{peer: p, ch: make(chan *pb.ReplicaEnvelope, 64)}
	id := s.calls.add(c)
	if id == 0 {
		return ErrClosed
	}
	defer s.calls.remove(id)
	env.RequestId = id
	s.out.send(p, wire.AppendReplica(nil, env))
	for {
		select {
		case ans := <-c.ch:
			done, err := handle(ans)
			if err != nil {
				return fmt.Errorf("remember: %w from %s: %w", errAnswer, p, err)
			}
			if done {
				return nil
			}
		case <-ctx.Done():
			return fmt.Errorf("remember: no answer from %s: %w", p, ctx.Err())
		}
	}
}

// chanCall passes the answers of one peer to a channel; answers beyond its capacity are
// dropped (the asker then times out).
type chanCall struct {
	peer peer.ID
	ch   chan *pb.ReplicaEnvelope
}

func (c *chanCall) deliver(from peer.ID, env *pb.ReplicaEnvelope) {
	if from != c.peer {
		return
	}
	select {
	case c.ch <- env:
	default:
	}
}

func (c *chanCall) abort(error) {}
