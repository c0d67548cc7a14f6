package remember

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dgraph-io/badger/v4"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/shardmesh/shardmesh/p2p"
	"github.com/shardmesh/shardmesh/wire"
	"github.com/shardmesh/shardmesh/wire/pb"
)

// Rounds in flight per store, for writes and for reads: enough to keep the disk and the
// network busy at once (one round's commit overlaps another's network wait) while letting
// operations pile up into large batches under load. (On 2 cores, 2 to 16 write rounds
// measured the same within noise.)
const (
	writeWindow = 4
	readWindow  = 2
)

// maxBatchWrites and maxBatchBytes bound one write round (one frame per peer).
const (
	maxBatchWrites = 8192
	maxBatchBytes  = partBytes
)

// clockRestartGap is added to the highest counter stored when a store opens. Counters this
// member handed out just before a crash may have reached other replicas without reaching
// its own disk; the gap (far more than a window of rounds can hand out) keeps its next
// writes ordered after them.
const clockRestartGap = 1 << 24

// Store is a member's replica of the replicated durable store, and its client: keyed,
// versioned records persisted in Badger on every member, written to and read from a quorum
// of them, kept in sync by anti-entropy. Create it with Open; all methods are safe for
// concurrent use.
type Store struct {
	cfg  Config
	log  *slog.Logger
	host *p2p.Host
	self peer.ID
	// writer is self's text form: the Writer of this member's versions.
	writer string
	db     *badger.DB
	com    *committer
	clock  clock
	calls  *calls
	out    *outboxes

	writes *batcher[*writeOp]
	reads  *batcher[*readOp]
	serve  chan struct{} // bounds the reads served to peers at once

	ctx    context.Context // ends when Close starts
	cancel context.CancelFunc

	mu     sync.Mutex
	closed bool
	wg     sync.WaitGroup // goroutines and handlers that Close waits for
	comWG  sync.WaitGroup // the committer, stopped last
	comEnd chan struct{}

	stats counters
	met   *storeMetrics // nil without Config.Metrics
}

// Open opens (creating if needed) the store in cfg.Dir, serves the replica protocol on
// cfg.Host and starts anti-entropy. A directory held by another process fails with an
// error wrapping ErrInUse that names it. ctx bounds only the opening.
func Open(ctx context.Context, cfg Config) (*Store, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	db, err := openBadger(cfg.Dir, cfg.Logger, cfg.Badger)
	if err != nil {
		return nil, err
	}
	s := &Store{
		cfg:    cfg,
		log:    cfg.Logger.With("component", "store"),
		host:   cfg.Host,
		self:   cfg.Host.ID(),
		writer: cfg.Host.ID().String(),
		db:     db,
		calls:  newCalls(),
		serve:  make(chan struct{}, 8),
		comEnd: make(chan struct{}),
	}
	if s.met, err = newStoreMetrics(cfg.Metrics, s); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("remember: register metrics: %w", err)
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.com = newCommitter(db, s.log, &s.clock, s.ctx.Done(), s.comEnd)
	s.com.met = s.met
	maxCounter, n, err := s.loadDigest()
	if err != nil {
		s.cancel()
		_ = db.Close()
		return nil, err
	}
	s.clock.observe(maxCounter + clockRestartGap)
	s.out = &outboxes{ctx: s.ctx, host: s.host, timeout: cfg.Timeout, dropped: func() { s.stats.framesDropped.Add(1) }, spawn: s.spawn, by: make(map[peer.ID]chan []byte)}
	s.writes = newBatcher(writeWindow, (*writeOp).weight, func(op *writeOp, err error) { op.finish(err) })
	s.reads = newBatcher(readWindow, func(op *readOp) (int, int) { return 1, len(op.key) },
		func(op *readOp, err error) { op.done <- readResult{err: err} })

	// Serve before anything is sent, so that the first answers reach this store.
	if cfg.Gate != nil {
		s.host.HandleGated(Protocol, cfg.Gate, s.handleFrame)
	} else {
		s.host.Handle(Protocol, s.handleFrame)
	}
	s.comWG.Add(1)
	go func() {
		defer s.comWG.Done()
		s.com.run()
	}()
	s.wg.Add(2)
	go func() {
		defer s.wg.Done()
		s.writes.run(s.ctx, s.startWrite)
	}()
	go func() {
		defer s.wg.Done()
		s.reads.run(s.ctx, s.startRead)
	}()
	if cfg.AntiEntropyInterval > 0 {
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.runAntiEntropy()
		}()
	}
	s.log.Info("store opened", "dir", cfg.Dir, "entries", n,
		"write_majority_plus", cfg.WriteMajorityPlus, "read_majority_plus", cfg.ReadMajorityPlus, "majority_min_cap", cfg.MajorityMinCap)
	return s, nil
}

// openBadger opens the Badger database in dir with the store's options, turning Badger's
// directory lock error into one wrapping ErrInUse.
func openBadger(dir string, log *slog.Logger, tune func(badger.Options) badger.Options) (*badger.DB, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("remember: create store directory: %w", err)
	}
	db, err := badger.Open(badgerOptions(dir, log, tune))
	if err != nil {
		if strings.Contains(err.Error(), "Cannot acquire directory lock") {
			return nil, fmt.Errorf("remember: %w: %s is held by another process (a running sharddaemon, or another store in this one); stop it first", ErrInUse, dir)
		}
		return nil, fmt.Errorf("remember: open store in %s: %w", dir, err)
	}
	return db, nil
}

// loadDigest computes the digest of everything stored and returns the highest counter and
// the number of entries. If the summary index does not match the records (a crash in the
// middle of a commit that Badger split into several transactions), it rebuilds the index.
func (s *Store) loadDigest() (maxCounter uint64, n int, err error) {
	var none entry
	err = iterate(s.db, "", false, func(e *entry) error {
		s.com.dig.update(e.rec.Key, &none, e)
		maxCounter = max(maxCounter, e.rec.Version.Counter)
		n++
		return nil
	})
	if err != nil {
		return 0, 0, fmt.Errorf("remember: read store in %s: %w", s.cfg.Dir, err)
	}
	var indexed digest
	err = scanStored(s.db, []byte(indexPrefix), len(indexPrefix)+2, false, func(e *entry) error {
		indexed.update(e.rec.Key, &none, e)
		return nil
	})
	if err != nil {
		return 0, 0, fmt.Errorf("remember: read store in %s: %w", s.cfg.Dir, err)
	}
	if indexed != s.com.dig {
		s.log.Warn("the anti-entropy index does not match the records (a crash during a commit?); rebuilding it", "dir", s.cfg.Dir, "entries", n)
		if err := rebuildIndex(s.db); err != nil {
			return 0, 0, fmt.Errorf("remember: rebuild the index of %s: %w", s.cfg.Dir, err)
		}
	}
	return maxCounter, n, nil
}

// Close stops the store: operations in flight fail with ErrClosed, anti-entropy stops, the
// database is closed. Frames that arrive afterwards are ignored (until another Store on the
// same host handles the protocol). Calls after the first return nil.
func (s *Store) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.mu.Unlock()
	s.cancel()
	s.calls.close()
	s.wg.Wait()
	close(s.comEnd)
	s.comWG.Wait()
	if err := s.db.Close(); err != nil {
		return fmt.Errorf("remember: close store in %s: %w", s.cfg.Dir, err)
	}
	s.log.Info("store closed", "dir", s.cfg.Dir)
	return nil
}

// enter registers a handler or goroutine that Close waits for; false once closing. A true
// return must be paired with s.wg.Done.
func (s *Store) enter() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	s.wg.Add(1)
	return true
}

// members returns the replicas of a round: Config.Members with this member added if
// missing and duplicates dropped, this member first.
func (s *Store) members() []peer.ID {
	ms := s.cfg.Members()
	out := make([]peer.ID, 0, len(ms)+1)
	out = append(out, s.self)
	seen := map[peer.ID]bool{s.self: true}
	for _, m := range ms {
		if m != "" && !seen[m] {
			seen[m] = true
			out = append(out, m)
		}
	}
	return out
}

// handleFrame serves one replica frame from a peer. A frame that does not decode is logged,
// counted and dropped; the stream stays up, since it carries other requests and answers.
// Once the store is closed, a frame resets its stream, so that the peer's next frame opens
// a new one, which reaches a store opened on the same host since.
func (s *Store) handleFrame(from peer.ID, frame []byte) error {
	if !s.enter() {
		return fmt.Errorf("replica frame from %s: %w", from, ErrClosed)
	}
	defer s.wg.Done()
	env, err := wire.DecodeReplica(frame)
	if err != nil {
		s.stats.malformed.Add(1)
		s.log.Warn("dropped a malformed replica frame", "peer", from, "bytes", len(frame), "err", err)
		return nil
	}
	switch m := env.Msg.(type) {
	case *pb.ReplicaEnvelope_Write:
		s.serveWrite(from, env.RequestId, fromPBs(m.Write.Records, false))
	case *pb.ReplicaEnvelope_Read:
		s.serveReadRequest(from, env.RequestId, m.Read)
	case *pb.ReplicaEnvelope_Repair:
		recs := fromPBs(m.Repair.Records, false)
		s.observe(recs)
		s.com.submit(&applyOp{kind: opMerge, recs: recs, done: func(applyResult) {}})
	case *pb.ReplicaEnvelope_Digest:
		s.serveDigest(from, env.RequestId, m.Digest.Buckets)
	default: // answers
		if !s.calls.deliver(from, env) {
			s.stats.lateAnswers.Add(1)
		}
	}
	return nil
}

// observe advances the clock past every counter in recs.
func (s *Store) observe(recs []entry) {
	var m uint64
	for i := range recs {
		m = max(m, recs[i].rec.Version.Counter)
	}
	s.clock.observe(m)
}

// spawn runs fn on a goroutine that Close waits for, unless the store is closing.
func (s *Store) spawn(fn func()) bool {
	if !s.enter() {
		return false
	}
	go func() {
		defer s.wg.Done()
		fn()
	}()
	return true
}

// Stats counts what a store did since it opened.
type Stats struct {
	Writes        uint64        // writes of Write calls
	WriteRounds   uint64        // rounds (one frame per peer) they went out in
	Reads         uint64        // keys of Get and GetFenced calls
	ReadRounds    uint64        // rounds they went out in
	Scans         uint64        // Scan calls
	Commits       uint64        // local group commits (one Badger WriteBatch, one fsync each)
	CommitTime    time.Duration // time spent in them
	Refused       uint64        // writes this replica refused for fencing
	Merged        uint64        // entries read repair and anti-entropy changed here
	Repairs       uint64        // records sent to replicas that lagged (read repair, anti-entropy)
	SyncRounds    uint64        // anti-entropy rounds that found differences
	Malformed     uint64        // frames from peers that did not decode
	FramesDropped uint64        // frames not sent (peer unreachable, queue full)
	LateAnswers   uint64        // answers that came after their round ended
}

type counters struct {
	writes, writeRounds, reads, readRounds, scans atomic.Uint64
	repairs, syncRounds, malformed, framesDropped atomic.Uint64
	lateAnswers                                   atomic.Uint64
}

// Stats returns a snapshot of the store's counters.
func (s *Store) Stats() Stats {
	c := &s.stats
	return Stats{
		Writes: c.writes.Load(), WriteRounds: c.writeRounds.Load(),
		Reads: c.reads.Load(), ReadRounds: c.readRounds.Load(), Scans: c.scans.Load(),
		Commits: s.com.commits.Load(), CommitTime: time.Duration(s.com.busy.Load()), Refused: s.com.refused.Load(), Merged: s.com.merged.Load(),
		Repairs: c.repairs.Load(), SyncRounds: c.syncRounds.Load(),
		Malformed: c.malformed.Load(), FramesDropped: c.framesDropped.Load(), LateAnswers: c.lateAnswers.Load(),
	}
}
