package remember

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
)

// Refill: a replica that lost records (its damaged store moved aside and started empty, or
// found holding far fewer keys than a peer) must not count in read quorums until it holds
// again what the others do. A write acknowledged by a write quorum before the loss may be
// on no replica of a read quorum that counts the empty one: for 3 replicas with quorums of
// 2, the write on {A, B}, B emptied, a read of {B, C} finds nothing. So while it refills,
// the replica answers every read (its own and its peers') with ErrRefilling, which counts
// as a failed answer: the reader's quorum comes from the others. Writes are stored and
// acknowledged as usual — what it stores it holds.
//
// It refills by anti-entropy rounds (syncRound) with its peers, one peer at a time, until
// a round covers every bucket that differs and pulls nothing: it then holds everything
// that peer holds. Once it holds what N - majority(N) + 1 of the N replicas hold, every
// write a majority acknowledged before the loss is here, and it counts again. A peer that
// is refilling itself does not count.
//
// The state survives a restart in a marker file (Config.RefillMarker), written by
// `shardctl data rebuild`, by store.rebuild-damaged, and by the store when it finds far
// fewer keys than a peer; removed when the refill is done.

// ErrRefilling says the replica is refilling from its peers after losing records; its answers
// to reads do not count until it is done.
var ErrRefilling = errors.New("replica refilling from its peers: its answers do not count in reads until it holds what they hold")

// refillPoll is how often a refill (or the first comparison with a peer) tries again.
const refillPoll = 500 * time.Millisecond

// Far fewer: a replica holding less than half the keys of a peer, and at least
// farFewerMin fewer, refills.
const farFewerMin = 64

// RefillState is what Store.Refill reports.
type RefillState struct {
	Active bool      // the replica refills: its answers do not count in reads
	Reason string    // why it refills
	Since  time.Time // since when
	Synced int       // peers whose records it holds now
	Need   int       // peers it must hold the records of
}

// Refill returns the state of the replica's refill.
func (s *Store) Refill() RefillState { return s.refill.state() }

// refiller keeps a store's refill state (see the top of this file).
type refiller struct {
	marker string // Config.RefillMarker
	active atomic.Bool

	mu     sync.Mutex
	reason string
	since  time.Time
	synced map[peer.ID]bool
	need   int
	turn   int // which unsynced peer the next step tries first
	stuck  int // steps that did not finish

	openKeys uint64 // the keys the replica held when it opened (set by Open)
}

// newRefiller reads the marker: a refill left unfinished, or asked for.
func newRefiller(marker string) *refiller {
	r := &refiller{marker: marker, synced: map[peer.ID]bool{}}
	if marker == "" {
		return r
	}
	if b, err := os.ReadFile(marker); err == nil {
		r.reason = string(b)
		if r.reason == "" {
			r.reason = "asked for (" + marker + ")"
		}
		r.since = time.Now()
		r.active.Store(true)
	}
	return r
}

func (r *refiller) state() RefillState {
	r.mu.Lock()
	defer r.mu.Unlock()
	return RefillState{Active: r.active.Load(), Reason: r.reason, Since: r.since, Synced: len(r.synced), Need: r.need}
}

// gate wraps the emit of a local read: while the replica refills, the read is answered with
// ErrRefilling instead of entries (a fenced read's floors are raised all the same).
func (r *refiller) gate(emit func([]entry, bool, error)) func([]entry, bool, error) {
	if !r.active.Load() {
		return emit
	}
	return func(_ []entry, last bool, err error) {
		if !last {
			return
		}
		if err == nil {
			err = fmt.Errorf("remember: %w", ErrRefilling)
		}
		emit(nil, true, err)
	}
}

// start begins a refill for reason, durably (the marker).
func (r *refiller) start(reason string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.marker != "" {
		if err := os.WriteFile(r.marker, []byte(reason), 0o600); err != nil {
			return fmt.Errorf("remember: write the refill marker: %w", err)
		}
	}
	r.reason, r.since = reason, time.Now()
	r.active.Store(true)
	return nil
}

// finish ends the refill: the replica counts again.
func (r *refiller) finish() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.marker != "" {
		if err := os.Remove(r.marker); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("remember: remove the refill marker: %w", err)
		}
	}
	r.active.Store(false)
	return nil
}

// runRefill compares the replica with a peer once (when it is a returning member's), and
// refills it when it must, until the store closes.
func (s *Store) runRefill() {
	t := time.NewTicker(refillPoll)
	defer t.Stop()
	compared := !s.cfg.Returning
	for {
		if !s.refill.active.Load() && compared {
			return
		}
		select {
		case <-s.ctx.Done():
			return
		case <-t.C:
		}
		if !s.refill.active.Load() {
			compared = s.compareWithPeer()
		} else if s.refillStep() {
			return
		}
	}
}

// compareWithPeer runs an anti-entropy round with a random peer and starts a refill when
// this replica holds far fewer keys; false when no peer answered.
func (s *Store) compareWithPeer() bool {
	p := s.randomPeer()
	if p == "" {
		return false
	}
	local := s.refill.openKeys // anti-entropy may have refilled some since: the question is what it came back with
	res, err := s.syncRound(p)
	if err != nil || res.refilling {
		s.log.Debug("refill: no comparison with a peer yet", "peer", p, "err", err, "peer_refilling", res.refilling)
		return false
	}
	if res.entries < farFewerMin || local*2 >= res.entries || res.entries-local < farFewerMin {
		s.log.Debug("refill: compared with a peer: not far fewer keys", "peer", p, "keys", local, "peer_keys", res.entries)
		return true
	}
	reason := fmt.Sprintf("it held %d keys when it started, far fewer than the %d of %s", local, res.entries, p)
	s.log.Warn("this replica holds far fewer keys than a peer (a store lost, replaced or damaged?): it refills from its peers before its answers count in reads",
		"dir", s.cfg.Dir, "keys", local, "peer", p, "peer_keys", res.entries)
	if err := s.refill.start(reason); err != nil {
		s.log.Error(err.Error())
	}
	return true
}

// refillStep syncs completely with the peers it still needs, in turns (starting where
// the last step failed); true once the replica holds what enough of them hold, and counts
// again.
func (s *Store) refillStep() bool {
	members := s.members()
	need := len(members) - (len(members)/2 + 1) + 1
	r := s.refill
	r.mu.Lock()
	r.need = need
	var unsynced []peer.ID
	for _, m := range members[1:] {
		if !r.synced[m] {
			unsynced = append(unsynced, m)
		}
	}
	turn := r.turn
	r.mu.Unlock()
	synced := len(members) - 1 - len(unsynced)
	failed := 0
	for i := range unsynced {
		if synced >= need {
			break
		}
		p := unsynced[(turn+i)%len(unsynced)]
		if !s.syncedWith(p) {
			failed++
			continue
		}
		synced++
		r.mu.Lock()
		r.synced[p] = true
		r.mu.Unlock()
		s.log.Info("refill: this replica holds what a peer holds", "dir", s.cfg.Dir, "peer", p, "peers", synced, "need", need)
	}
	if len(members) > 1 && synced >= need {
		if err := r.finish(); err != nil {
			s.log.Error(err.Error())
			return false
		}
		s.log.Info("refilled from the peers: this replica counts in reads again", "dir", s.cfg.Dir, "keys", s.com.digestSnapshot().entries(),
			"peers", synced, "took", time.Since(r.state().Since).Round(time.Millisecond).String())
		return true
	}
	r.mu.Lock()
	r.turn += failed // another peer first next time
	r.stuck++
	stuck := failed > 0 && r.stuck%20 == 0
	r.mu.Unlock()
	if stuck { // ten seconds of steps
		s.log.Warn("refill: the peers it still needs do not answer, or refill themselves (did a majority of the replicas lose their stores?); it waits, not counting in reads",
			"dir", s.cfg.Dir, "peers", len(members)-1, "synced", synced, "need", need)
	}
	return false
}

// maxSyncRounds bounds the anti-entropy rounds of one attempt to sync completely with a
// peer (each moves up to a frame of records).
const maxSyncRounds = 10000

// syncedWith runs anti-entropy rounds with p until one covers every differing bucket and
// pulls nothing (true), or a round fails or p refills itself (false).
func (s *Store) syncedWith(p peer.ID) bool {
	for range maxSyncRounds {
		if s.ctx.Err() != nil {
			return false
		}
		res, err := s.syncRound(p)
		if err != nil || res.refilling {
			return false
		}
		if res.buckets >= res.differing && res.pulled == 0 {
			return true
		}
	}
	return false
}
