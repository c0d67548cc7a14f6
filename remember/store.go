package remember

import (
	"context"
	crand "crypto/rand"
	"encoding/binary"
	"fmt"
	"github.com/shardmesh/shardmesh/remember/metaraft"
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

// Store is a member's replica of the replicated durable store, and its client: a Machine
// driven by one goroutine, with its disk on Badger (badgerDisk) and its peers over libp2p.
// Create it with Open; all methods are safe for concurrent use.
type Store struct {
	cfg         Config
	log         *slog.Logger
	host        *p2p.Host
	self        NodeID
	db          *badger.DB
	metaStorage metaraft.Storage // this member's replica of the metadata group, when it is a voter
	disk        *badgerDisk
	out         *outboxes

	// Owned by the loop goroutine.
	m        *Machine
	waiting  map[CallID]func(Answer)
	peers    map[NodeID]peer.ID // decoded once
	place    *Placement         // the last Config.Placement given to the machine
	admitted []NodeID           // the last Config.Admitted given to it

	inbox    chan storeInput
	results  diskResults   // the disk's results, for the loop
	changed  chan struct{} // MembersChanged: the loop syncs the members now
	loopDone chan struct{}

	ctx    context.Context // ends when Close starts
	cancel context.CancelFunc

	mu     sync.Mutex
	closed bool
	wg     sync.WaitGroup // frame handlers and outbox goroutines that Close waits for

	statsMu   sync.Mutex
	stats     Stats       // the machine's, as of the loop's last turn
	refill    RefillState // the machine's, as of the loop's last turn
	dropped   uint64
	malformed uint64

	space  *diskGuard            // the reserve of free space (diskspace.go)
	broken atomic.Pointer[error] // why the store broke (panics.go)

	names sync.Map // peer.ID → NodeID: the text form of a peer id, encoded once

	met *storeMetrics // nil without Config.Metrics
}

// storeInput is one thing for the store's loop: a call, or a peer's frame. Disk results
// come in diskResults.
type storeInput struct {
	fn   func() // runs on the loop (inspection)
	call *apiCall
	from NodeID
	env  *pb.ReplicaEnvelope
}

// diskResults queues the disk's results for the loop without a bound: the loop hands the
// disk its operations and the disk hands back their results, so neither may wait for the
// other (a full inbox and a full queue of applies deadlocked the store on a full disk,
// where every refused apply is tried again).
type diskResults struct {
	mu    sync.Mutex
	queue []DiskResult
	ready chan struct{} // a token while queue holds something
}

// put queues res; it never blocks.
func (q *diskResults) put(res DiskResult) {
	q.mu.Lock()
	q.queue = append(q.queue, res)
	q.mu.Unlock()
	select {
	case q.ready <- struct{}{}:
	default:
	}
}

// take returns the queued results, in the order they came.
func (q *diskResults) take() []DiskResult {
	q.mu.Lock()
	defer q.mu.Unlock()
	out := q.queue
	q.queue = nil
	return out
}

// apiCall is a Write, Get or Scan of the Store's API; done hears its answer on the loop.
type apiCall struct {
	writes  []Write
	get     bool
	key     string
	fence   uint64
	scan    bool
	scanAll bool
	prefix  string
	done    func(Answer)
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
	db, err := openBadger(cfg.Dir, cfg.Logger, cfg.Badger, cfg.MinFreeSpace)
	if err != nil {
		return nil, err
	}
	s := &Store{
		cfg:      cfg,
		log:      cfg.Logger.With("component", "store"),
		host:     cfg.Host,
		self:     NodeID(cfg.Host.ID().String()),
		db:       db,
		waiting:  map[CallID]func(Answer){},
		peers:    map[NodeID]peer.ID{},
		inbox:    make(chan storeInput, 4096),
		results:  diskResults{ready: make(chan struct{}, 1)},
		changed:  make(chan struct{}, 1),
		loopDone: make(chan struct{}),
	}
	if s.met, err = newStoreMetrics(cfg.Metrics, s); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("remember: register metrics: %w", err)
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.space = newDiskGuard(cfg.Dir, cfg.MinFreeSpace, db.Opts(), s.log)
	s.disk = newBadgerDisk(db, cfg.Dir, s.log, s.met, s.space, s.caught, s.diskDone)
	st, err := s.disk.state(cfg.Layout)
	if err == nil {
		// A voter's replica of the metadata group, in the same Badger (diskformat.go).
		var bs *metaraft.BadgerStorage
		bs, err = metaraft.OpenBadgerStorage(db, metaRaftPrefix)
		s.metaStorage = guardedStorage{BadgerStorage: bs, space: s.space}
	}
	if err == nil {
		s.m, err = NewMachine(s.machineConfig(), st, time.Now())
	}
	if err == nil {
		err = s.startRefill()
	}
	if err != nil {
		s.cancel()
		s.disk.close()
		_ = db.Close()
		return nil, err
	}
	mc := s.m.cfg
	s.out = &outboxes{ctx: s.ctx, host: s.host, timeout: mc.Timeout, dropped: s.frameDropped, spawn: s.spawn, by: make(map[peer.ID]chan []byte)}

	s.syncMembers(time.Now()) // before the loop owns the machine
	s.refill = s.m.Refill()
	if st := s.refill; st.Active {
		s.log.Warn("this replica refills from its peers before its answers count in reads", "dir", cfg.Dir, "why", st.Reason)
	}
	// Serve before anything is sent, so that the first answers reach this store.
	s.host.Handle(Protocol, s.handleFrame)
	go s.loop()
	s.spawn(s.watchSpace) // diskspace.go
	s.log.Info("store opened", "dir", cfg.Dir, "entries", st.entries, "units", len(st.hold.units))
	return s, nil
}

// machineConfig is the machine's part of the configuration (NewMachine validates it).
func (s *Store) machineConfig() MachineConfig {
	var seed [8]byte
	_, _ = crand.Read(seed[:])
	mc := s.cfg.machine(s.self)
	mc.Seed = binary.LittleEndian.Uint64(seed[:])
	mc.Returning = s.cfg.Returning
	if s.cfg.MetaSeedMarker != "" {
		_, err := os.Stat(s.cfg.MetaSeedMarker)
		mc.MetaSeed = err == nil
	}
	mc.OnMetaSeeded = s.metaSeeded
	mc.OnRound = func(kind string, n int) {
		if kind == "write" {
			s.met.writeRound(n)
		} else {
			s.met.readRound(n)
		}
	}
	mc.MetaStorage = s.metaStorage
	mc.Admit = s.space.admit
	mc.OnMetaGroup = func(c metaraft.Configuration) {
		s.log.Info("the metadata group's voters changed", "index", c.Index, "voters", c.Voters, "outgoing", c.Outgoing)
	}
	return mc
}

// metaSeeded removes the seed's marker (Config.MetaSeedMarker): the metadata of this disk
// is in the metadata group (metaseed.go).
func (s *Store) metaSeeded() {
	s.log.Info("the metadata on this disk is in the metadata group", "dir", s.cfg.Dir)
	if s.cfg.MetaSeedMarker == "" {
		return
	}
	if err := os.Remove(s.cfg.MetaSeedMarker); err != nil && !os.IsNotExist(err) {
		s.log.Error("cannot remove the metadata seed marker: the next start merges this disk's metadata again (harmless)", "err", err)
	}
}

// openBadger opens the Badger database in dir with the store's options, turning Badger's
// directory lock error into one wrapping ErrInUse. Before Badger sees them it checks the
// files (a *DamageError) and that the file system has room for what opening writes (a
// *DiskFullError; reserve is Config.MinFreeSpace): see checkBeforeOpen.
func openBadger(dir string, log *slog.Logger, tune func(badger.Options) badger.Options, reserve int64) (*badger.DB, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("remember: create store directory: %w", err)
	}
	opt := badgerOptions(dir, log, tune)
	if err := checkBeforeOpen(opt, reserve, log); err != nil {
		return nil, err
	}
	var db *badger.DB
	err := guard(func() (err error) { db, err = badger.Open(opt); return err })
	if err != nil {
		if strings.Contains(err.Error(), "Cannot acquire directory lock") {
			return nil, inUse(dir)
		}
		return nil, fmt.Errorf("remember: open store in %s: %w", dir, err)
	}
	return db, nil
}

// inUse is the ErrInUse of a store directory another process holds.
func inUse(dir string) error {
	return fmt.Errorf("remember: %w: %s is held by another process (a running sharddaemon, or another store in this one); stop it first", ErrInUse, dir)
}

// loop is the one goroutine that owns the machine.
func (s *Store) loop() {
	defer close(s.loopDone)
	defer s.caught("the store's loop")
	timer := time.NewTimer(s.untilDeadline())
	defer timer.Stop()
	for {
		select {
		case <-s.ctx.Done():
			for _, done := range s.waiting {
				done(Answer{Err: ErrClosed})
			}
			return
		case in := <-s.inbox:
			now := time.Now()
			s.syncMembers(now)
			s.step(now, in)
			for i := 0; i < 256; i++ { // what else is waiting, before carrying anything out
				select {
				case in := <-s.inbox:
					s.step(now, in)
					continue
				default:
				}
				break
			}
		case <-timer.C:
			now := time.Now()
			s.syncMembers(now)
			s.m.Tick(now)
		case <-s.changed:
			s.syncMembers(time.Now())
		case <-s.results.ready:
			now := time.Now()
			for _, res := range s.results.take() {
				s.m.DiskDone(now, res)
			}
		}
		s.execute()
		timer.Reset(s.untilDeadline())
	}
}

// untilDeadline is how long the loop may sleep before the machine needs a Tick.
func (s *Store) untilDeadline() time.Duration {
	next := s.m.NextDeadline()
	if next.IsZero() {
		return time.Hour
	}
	return max(time.Until(next), time.Millisecond)
}

// MembersChanged tells the store that Config.Placement or Admitted may return other members
// now. The store asks them before each input it takes, but a peer whose frames wait for it
// to be admitted may send nothing more until they are answered: without this the frames
// would wait for the store's next input or deadline, and the peer's round would time out.
// Safe from any goroutine; it never blocks.
func (s *Store) MembersChanged() {
	select {
	case s.changed <- struct{}{}:
	default:
	}
}

// syncMembers gives the machine Config.Placement and Config.Admitted when they changed.
func (s *Store) syncMembers(now time.Time) {
	if p := s.cfg.Placement(); p != s.place {
		s.place = p
		s.m.SetPlacement(now, p)
	}
	if s.cfg.Admitted != nil {
		if as := s.cfg.Admitted(); !sameIDs(as, s.admitted) {
			s.admitted = as
			s.m.SetAdmitted(now, as)
		}
	}
}

// sameIDs reports whether a and b hold the same ids in the same order (at once when they
// are the same slice).
func sameIDs(a, b []NodeID) bool {
	if len(a) != len(b) {
		return false
	}
	if len(a) == 0 || &a[0] == &b[0] {
		return true
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func (s *Store) step(now time.Time, in storeInput) {
	switch {
	case in.fn != nil:
		in.fn()
	case in.call != nil:
		c := in.call
		var id CallID
		switch {
		case c.scanAll:
			id = s.m.ScanAll(now, c.prefix)
		case c.scan:
			id = s.m.Scan(now, c.prefix)
		case c.get:
			id = s.m.Get(now, c.key, c.fence)
		default:
			id = s.m.Write(now, c.writes)
		}
		s.waiting[id] = c.done
	case in.env != nil:
		s.m.ReceiveEnvelope(now, in.from, in.env)
	}
}

// execute carries out what the machine asked for.
func (s *Store) execute() {
	for {
		rd := s.m.Ready()
		if rd.Empty() {
			break
		}
		for _, snd := range rd.Sends {
			if id, ok := s.peerID(snd.To); ok {
				s.out.send(id, snd.Frame)
			} else {
				s.frameDropped()
			}
		}
		for _, op := range rd.Disk {
			s.disk.do(op)
		}
		for _, a := range rd.Answers {
			if done := s.waiting[a.Call]; done != nil {
				delete(s.waiting, a.Call)
				done(a)
			}
		}
		if s.cfg.Refused != nil {
			for _, from := range rd.Refused {
				s.cfg.Refused(from)
			}
		}
		if s.cfg.Landed != nil && len(rd.Landed) > 0 {
			s.cfg.Landed(rd.Landed)
		}
	}
	st, rf := s.m.Stats(), s.m.Refill()
	if rf.Active != s.refill.Active { // (only this loop writes s.refill)
		// Before the state is published: whoever sees the refill done (shardctl health)
		// finds the marker gone and the line logged.
		s.refillChanged(rf)
	}
	s.statsMu.Lock()
	s.stats = st
	s.refill = rf
	s.statsMu.Unlock()
}

// peerID returns the libp2p id of member id, decoded once.
func (s *Store) peerID(id NodeID) (peer.ID, bool) {
	if p, ok := s.peers[id]; ok {
		return p, true
	}
	p, err := peer.Decode(string(id))
	if err != nil {
		return "", false
	}
	if len(s.peers) > 4096 {
		clear(s.peers) // members come and go; keep the cache bounded
	}
	s.peers[id] = p
	return p, true
}

// diskDone hands a disk result to the loop; it never blocks.
func (s *Store) diskDone(res DiskResult) { s.results.put(res) }

// submit hands a call to the loop; false once the store is closing.
func (s *Store) submit(c *apiCall) bool {
	if s.ctx.Err() != nil {
		return false
	}
	select {
	case s.inbox <- storeInput{call: c}:
		return true
	case <-s.ctx.Done():
		return false
	}
}

// Write stores ws and returns once a majority of the replica set of each write's unit
// holds them on disk (of both sets while the unit's replicas move). Concurrent calls are group-committed: their
// writes go out together, in one frame per replica and one Badger commit (one fsync) per
// replica, and each call is acknowledged with its batch.
//
// Each write gets a version (its Epoch, the next counter of this member's clock, this
// member's id) and is stored on each replica by the merge rule: a concurrent writer's higher
// version wins everywhere. A write refused by replicas for fencing makes the call fail with
// a *FencedError (errors.Is ErrFenced) once the quorum can no longer be reached; too few
// answers within Config.Timeout, with a *QuorumError (ErrNoQuorum). A failed call's writes
// may still be stored on some replicas (and spread from there): retry with the same writes,
// or overwrite. The writes of one call are not atomic across keys; writes of the same key
// in one call are ordered as given (the last wins).
func (s *Store) Write(ctx context.Context, ws ...Write) error {
	if len(ws) == 0 {
		return nil
	}
	if err := CheckWrites(ws); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("remember: write of %q: %w", ws[0].Key, err)
	}
	start := s.met.start()
	a, err := s.call(ctx, &apiCall{writes: ownCopy(ws)})
	if err == nil {
		err = a.Err
	} else {
		err = fmt.Errorf("remember: write of %q: %w (it may still be stored)", ws[0].Key, err)
	}
	s.met.wrote(start, ws[0].Key, err)
	return err
}

// Get returns key's record merged (by the merge rule) from a majority of the replica set of
// key's unit; found is false when no replica of the quorum holds
// the key or the winning record is a tombstone (then returned, Deleted set). Replicas of the
// quorum that lag are sent the merged record (read repair). Concurrent Get and GetFenced
// calls go out together in one frame per replica.
func (s *Store) Get(ctx context.Context, key string) (rec Record, found bool, err error) {
	return s.get(ctx, key, 0)
}

// GetFenced is Get in one round that first raises key's fence floor to epoch on every
// replica it reaches, durably. It returns once a read quorum has raised the floor and
// answered, so from then on a write of key with an epoch below epoch cannot reach a write
// quorum (the two quorums intersect): the writer gets ErrFenced. The record returned holds
// every write acknowledged before.
func (s *Store) GetFenced(ctx context.Context, key string, epoch uint64) (rec Record, found bool, err error) {
	return s.get(ctx, key, epoch)
}

func (s *Store) get(ctx context.Context, key string, fence uint64) (Record, bool, error) {
	if err := checkKey(key); err != nil {
		return Record{}, false, err
	}
	start := s.met.start()
	a, err := s.call(ctx, &apiCall{get: true, key: key, fence: fence})
	if err != nil {
		err = fmt.Errorf("remember: read of %q: %w", key, err)
	} else {
		err = a.Err
	}
	s.met.got(start, key, err)
	if err != nil {
		return Record{}, false, err
	}
	return a.Record, a.Found, nil
}

// Scan returns the live records of every key starting with prefix, sorted by key, merged
// from a read quorum of the prefix's unit like Get; tombstones are left out. Replicas of
// the quorum that lag are repaired. A prefix spanning units fails with ErrSpansUnits.
func (s *Store) Scan(ctx context.Context, prefix string) ([]Record, error) {
	if len(prefix) > MaxKeySize {
		return nil, fmt.Errorf("remember: scan prefix of %d bytes (at most %d): %w", len(prefix), MaxKeySize, ErrTooLarge)
	}
	start := s.met.start()
	a, err := s.call(ctx, &apiCall{scan: true, prefix: prefix})
	if err != nil {
		err = fmt.Errorf("remember: scan of %q: %w", prefix, err)
	} else {
		err = a.Err
	}
	s.met.scanned(start, prefix, err)
	return a.Records, err
}

// ScanAll returns the live records of every key starting with prefix from every member,
// whatever the units (an administrator's view: stats, inspection), sorted by key; missing
// names the members that did not answer within the timeout (the records only they hold
// are left out: a partial result).
func (s *Store) ScanAll(ctx context.Context, prefix string) (recs []Record, missing []NodeID, err error) {
	if len(prefix) > MaxKeySize {
		return nil, nil, fmt.Errorf("remember: scan prefix of %d bytes (at most %d): %w", len(prefix), MaxKeySize, ErrTooLarge)
	}
	a, err := s.call(ctx, &apiCall{scanAll: true, prefix: prefix})
	if err != nil {
		return nil, nil, fmt.Errorf("remember: scan of %q: %w", prefix, err)
	}
	return a.Records, a.Missing, a.Err
}

// Host tells the store that this member hosts the shard of unit u with allocation epoch
// epoch (see Machine.Host); it returns at once.
func (s *Store) Host(u Unit, epoch uint64) {
	s.post(func() { s.m.Host(time.Now(), u, epoch) })
}

// Unhost tells the store that this member no longer hosts u's shard.
func (s *Store) Unhost(u Unit) {
	s.post(func() { s.m.Unhost(time.Now(), u) })
}

// Care has the store look at the configurations of units at once (Machine.Care).
func (s *Store) Care(units []Unit) {
	s.post(func() { s.m.Care(time.Now(), units) })
}

// post hands fn to the loop without waiting; dropped once the store is closing.
func (s *Store) post(fn func()) {
	select {
	case s.inbox <- storeInput{fn: fn}:
	case <-s.ctx.Done():
	}
}

// Units reports the shard units this member hosts: their replica sets and moves.
func (s *Store) Units() []UnitStatus {
	var out []UnitStatus
	s.onLoop(func() { out = s.m.Units() })
	return out
}

// MetaStatus returns this member's view of the metadata group.
func (s *Store) MetaStatus() (st MetaStatus) {
	s.onLoop(func() { st = s.m.MetaStatus() })
	return st
}

// Holdings reports what this replica holds: the shard units it has records of, and how
// many metadata keys.
func (s *Store) Holdings() (units []Holding, metaKeys int) {
	s.onLoop(func() { units, metaKeys = s.m.Holdings() })
	return units, metaKeys
}

// call hands c to the loop and waits for its answer or ctx. An error is ctx's or ErrClosed;
// the answer carries the call's own.
func (s *Store) call(ctx context.Context, c *apiCall) (Answer, error) {
	ch := make(chan Answer, 1)
	c.done = func(a Answer) { ch <- a }
	if !s.submit(c) {
		return Answer{}, ErrClosed
	}
	select {
	case a := <-ch:
		if a.Err == ErrClosed {
			return Answer{}, ErrClosed
		}
		return a, nil
	case <-s.loopDone:
		select {
		case a := <-ch: // answered before the loop ended
			if a.Err != ErrClosed {
				return a, nil
			}
		default:
		}
		return Answer{}, ErrClosed
	case <-ctx.Done():
		return Answer{}, ctx.Err()
	}
}

// ownCopy copies ws and their values (into one buffer): the round may outlive a Write
// call whose ctx ended, and the caller may then reuse its slices.
func ownCopy(ws []Write) []Write {
	n := 0
	for _, w := range ws {
		n += len(w.Value)
	}
	buf := make([]byte, 0, n)
	out := make([]Write, len(ws))
	for i, w := range ws {
		out[i] = w
		if w.Value != nil {
			start := len(buf)
			buf = append(buf, w.Value...)
			out[i].Value = buf[start:len(buf):len(buf)]
		}
	}
	return out
}

// CheckWrites checks a Write call's writes against the store's limits.
func CheckWrites(ws []Write) error {
	if len(ws) > MaxWrites {
		return fmt.Errorf("remember: %d writes in one call (at most %d): %w", len(ws), MaxWrites, ErrTooLarge)
	}
	total := 0
	for _, w := range ws {
		if err := checkKey(w.Key); err != nil {
			return err
		}
		if len(w.Value) > MaxValueSize {
			return fmt.Errorf("remember: value of %q is %d bytes (at most %d): %w", w.Key, len(w.Value), MaxValueSize, ErrTooLarge)
		}
		total += len(w.Key) + len(w.Value)
	}
	if total > MaxWriteBytes {
		return fmt.Errorf("remember: one write call of %d bytes (at most %d): %w", total, MaxWriteBytes, ErrTooLarge)
	}
	return nil
}

func checkKey(key string) error {
	if key == "" {
		return fmt.Errorf("remember: empty key")
	}
	if len(key) > MaxKeySize {
		return fmt.Errorf("remember: key of %d bytes (at most %d): %w", len(key), MaxKeySize, ErrTooLarge)
	}
	return nil
}

// onLoop runs fn on the loop and waits for it; false once the store is closed.
func (s *Store) onLoop(fn func()) bool {
	done := make(chan struct{})
	select {
	case s.inbox <- storeInput{fn: func() { fn(); close(done) }}:
	case <-s.ctx.Done():
		return false
	}
	select {
	case <-done:
		return true
	case <-s.loopDone:
		return false
	}
}

// digestSnapshot returns the machine's digest of the metadata on the local replica; the
// zero digest once the store is closed.
func (s *Store) digestSnapshot() *digest {
	d := new(digest)
	s.onLoop(func() { *d = s.m.hold.meta })
	return d
}

// Close stops the store: calls in flight fail with ErrClosed, anti-entropy stops, the
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
	<-s.loopDone
	s.disk.close()
	s.wg.Wait()
	if err := s.closeDB(); err != nil {
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

// spawn runs fn on a goroutine that Close waits for, unless the store is closing.
func (s *Store) spawn(fn func()) bool {
	if !s.enter() {
		return false
	}
	go func() {
		defer s.wg.Done()
		defer s.caught("a store task")
		fn()
	}()
	return true
}

// handleFrame serves one replica frame from a peer: decoded here, on the stream's
// goroutine, and handed to the loop. A frame that does not decode is logged, counted and
// dropped; the stream stays up, since it carries other requests and answers. Once the
// store is closed, a frame resets its stream, so that the peer's next frame opens a new
// one, which reaches a store opened on the same host since.
func (s *Store) handleFrame(from peer.ID, frame []byte) error {
	if !s.enter() {
		return fmt.Errorf("replica frame from %s: %w", from, ErrClosed)
	}
	defer s.wg.Done()
	env, err := wire.DecodeReplica(frame)
	if err != nil {
		s.statsMu.Lock()
		s.malformed++
		s.statsMu.Unlock()
		s.log.Warn("dropped a malformed replica frame", "peer", from, "bytes", len(frame), "err", err)
		return nil
	}
	select {
	case s.inbox <- storeInput{from: s.nameOf(from), env: env}:
	case <-s.ctx.Done():
	}
	return nil
}

// nameOf returns the text form of peer id p (base58: worth encoding once per peer).
func (s *Store) nameOf(p peer.ID) NodeID {
	if v, ok := s.names.Load(p); ok {
		return v.(NodeID)
	}
	id := NodeID(p.String())
	s.names.Store(p, id)
	return id
}

func (s *Store) frameDropped() {
	s.statsMu.Lock()
	s.dropped++
	s.statsMu.Unlock()
}

// Stats returns a snapshot of the store's counters.
func (s *Store) Stats() Stats {
	s.statsMu.Lock()
	st := s.stats
	st.FramesDropped = s.dropped
	st.Malformed += s.malformed
	s.statsMu.Unlock()
	st.Commits = s.disk.commits.Load()
	st.CommitTime = time.Duration(s.disk.busy.Load())
	return st
}
