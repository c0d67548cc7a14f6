package remember

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/shardmesh/shardmesh/wire"
	"github.com/shardmesh/shardmesh/wire/pb"
)

// Anti-entropy: every Config.AntiEntropyInterval (±25%) a replica sends its digest (one
// hash per bucket of the key space) to a random other member. That member answers with the
// summaries (key, version, tombstone, floor, value hash; no values) of its entries in the
// buckets that differ, as many buckets as fit one frame. The initiator compares them with
// its own entries of those buckets (reconcile), pushes what the peer lacks or holds older
// (repair frames, merged there) and pulls what it lacks (a read of those keys, merged
// here). Tombstones travel like records. A round that found differences is followed by
// another at once (after catchUpDelay), so a member that was down catches up at the speed
// of the network rather than a bucket set per interval.
//
// Tombstones are never collected: dropping one safely needs every replica, including those
// down now, to have it, or anti-entropy would bring the deleted record back. Offline
// removal (Local.DeletePrefix on every member's directory) is the way to shed them.

// catchUpDelay is the pause between anti-entropy rounds while they find differences.
const catchUpDelay = 10 * time.Millisecond

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
			differed, err := s.syncWith(p)
			switch {
			case err != nil && s.ctx.Err() == nil:
				s.log.Debug("anti-entropy round failed", "peer", p, "err", err)
			case differed:
				next = min(next, catchUpDelay)
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
	if err != nil || len(sum.Buckets) == 0 {
		return false, err
	}
	s.stats.syncRounds.Add(1)
	covered := make(map[int]bool, len(sum.Buckets))
	for _, b := range sum.Buckets {
		covered[int(b)] = true
	}
	remote := fromPBs(sum.Records, true)
	s.observe(remote)
	local := make(map[string]entry)
	err = iterate(s.db, "", false, func(e *entry) error {
		if covered[bucketOf(e.rec.Key)] {
			local[e.rec.Key] = *e
		}
		return nil
	})
	if err != nil {
		return true, fmt.Errorf("remember: read %s: %w", s.cfg.Dir, err)
	}
	push, pull := reconcile(local, remote)
	if len(push) > 0 {
		entries, err := readEntries(s.db, push)
		if err != nil {
			return true, fmt.Errorf("remember: read %s: %w", s.cfg.Dir, err)
		}
		s.repair(map[peer.ID][]entry{p: entries})
	}
	if len(pull) > 0 {
		if err := s.pull(ctx, p, pull); err != nil {
			return true, err
		}
	}
	s.log.Debug("anti-entropy round", "peer", p, "buckets", len(sum.Buckets), "pushed", len(push), "pulled", len(pull))
	return true, nil
}

// pull reads keys from p and merges them here, waiting until they are on disk.
func (s *Store) pull(ctx context.Context, p peer.ID, keys []string) error {
	var got []entry
	err := s.ask(ctx, p, &pb.ReplicaEnvelope{Msg: &pb.ReplicaEnvelope_Read{Read: &pb.ReplicaRead{Keys: keyBytes(keys)}}},
		func(env *pb.ReplicaEnvelope) (bool, error) {
			m, ok := env.Msg.(*pb.ReplicaEnvelope_Records)
			if !ok {
				return false, fmt.Errorf("answer to a read is %T", env.Msg)
			}
			if m.Records.Error != "" {
				return true, fmt.Errorf("replica %s: %s", p, m.Records.Error)
			}
			got = append(got, fromPBs(m.Records.Records, false)...)
			return m.Records.Last, nil
		})
	if err != nil || len(got) == 0 {
		return err
	}
	s.observe(got)
	done := make(chan error, 1)
	if !s.com.submit(&applyOp{kind: opMerge, recs: got, done: func(res applyResult) { done <- res.err }}) {
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
			Msg: &pb.ReplicaEnvelope_Summaries{Summaries: &pb.ReplicaSummaries{Buckets: buckets, Records: toPBs(recs, true)}}}))
	}
	if len(differing) == 0 {
		answer(nil, nil)
		return
	}
	picked := d.pickBuckets(differing, maxSummaries)
	s.spawn(func() {
		byBucket := make(map[int][]entry, len(picked))
		for _, b := range picked {
			byBucket[b] = nil
		}
		err := iterate(s.db, "", false, func(e *entry) error {
			b := bucketOf(e.rec.Key)
			if list, ok := byBucket[b]; ok {
				byBucket[b] = append(list, *e)
			}
			return nil
		})
		if err != nil {
			s.log.Error("anti-entropy: cannot read the store", "dir", s.cfg.Dir, "err", err)
			return
		}
		// Whole buckets only, in order, as many as fit a frame part (at least one).
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
