package node

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/shardmesh/shardmesh/coordinator"
	"github.com/shardmesh/shardmesh/datadir"
	"github.com/shardmesh/shardmesh/engine"
	"github.com/shardmesh/shardmesh/remember"
	"github.com/shardmesh/shardmesh/shard"
	"github.com/shardmesh/shardmesh/wire"
	"github.com/shardmesh/shardmesh/wire/pb"
)

// What the core asks of the replicated store, and what it does with the answers: the
// remembered entities the engine asks for, the coordinators' terms, the operator's
// directives, the placement history. Every request goes to Env.Store and is answered by a
// StoreDone; the core keeps what waits on each (storeWait), and retries by its own clock.

// StoreRequest is one request of the core to the replicated store: a write (Writes), a read
// (Get, fenced above 0 with Fence), or a scan (Scan, with IsScan: "" scans everything).
type StoreRequest struct {
	Writes []remember.Write
	// Prefetch: with the writes remembering starting entities, their states to read early
	// (prefetch.go); the node reads those of types whose entities load their state.
	Prefetch []StatePrefetch
	Get      string
	Fence    uint64
	Scan     string
	IsScan   bool
}

// StoreResult answers a StoreRequest: a read's Record and Found, a scan's Records (live
// records, sorted by key), or Err.
type StoreResult struct {
	Record  remember.Record
	Found   bool
	Records []remember.Record
	Err     error
}

// storeWaitKind says what waits on a store request.
type storeWaitKind uint8

const (
	waitRemember          storeWaitKind = iota + 1 // remembered entities (engine StoreRemember ops)
	waitForget                                     // passivated entities forgotten
	waitLoadEntities                               // a shard's remembered entities
	waitLoadShards                                 // a type's remembered shards
	waitTermRead                                   // a coordinator's term: the last one claimed
	waitTermWrite                                  // a coordinator's term: the claim
	waitTermSpread                                 // a claimed term, written again as the cluster grew
	waitDirectives                                 // the operator's directives, read
	waitDeparture                                  // the units' configurations, read by a leaving member
	waitDirectiveChange                            // a change of a directive, written
	waitHistory                                    // placement records written
	waitHistoryScan                                // a type's history read, to prune it
	waitRemindersLoad                              // a shard's reminders read
	waitRemindersClaim                             // a shard's reminders claimed with its epoch
	waitReminderChange                             // an entity's reminder registered or cancelled
	waitReminderUpdate                             // a fired reminder rescheduled or removed
	waitRemindersRescan                            // a shard's reminders read again
	waitRemindersAdopt                             // reminders found by a read again, claimed
	waitReminderShardMark                          // a shard with reminders stored as one that must run
)

// storeWait is what waits on one store request.
type storeWait struct {
	kind    storeWaitKind
	started time.Time
	ops     []engine.StoreOp // waitRemember, waitForget, waitLoadEntities, waitLoadShards
	typ     string           // waitTermRead, waitTermWrite, waitHistoryScan
	up      uint64           // waitTermRead, waitTermWrite: the coordinator's up-number
	term    uint64           // waitTermWrite
	holders int              // waitTermWrite, waitTermSpread: the replicas when it was asked
	change  *directiveChange // waitDirectiveChange
	records int              // waitHistory
	// The reminders' waits: the shard (typ, shard, and its epoch in up), the operation
	// (waitReminderChange), the reminder and its firing (waitReminderUpdate).
	shard    shard.ID
	reminder *ReminderOp
	remID    reminderID
	seq      uint64
}

// coreStore holds the store requests in flight.
type coreStore struct {
	next    uint64
	pending map[uint64]storeWait
}

// request asks the store for req; w waits on the answer.
func (c *Core) request(req StoreRequest, w storeWait) {
	c.store.next++
	w.started = c.now
	c.store.pending[c.store.next] = w
	c.env.Store(c.store.next, req)
}

// storeDone takes the answer of a store request.
func (c *Core) storeDone(now time.Time, id uint64, res StoreResult) {
	w, ok := c.store.pending[id]
	if !ok {
		return
	}
	delete(c.store.pending, id)
	err := res.Err
	switch w.kind {
	case waitRemember:
		c.recovery.store(now.Sub(w.started), err)
		if err != nil {
			c.log.Warn("remembering entities failed; retried after shard-failure-backoff", "entities", len(w.ops), "err", err)
		}
		c.remembered(now, w.ops, err)
	case waitForget:
		c.recovery.store(now.Sub(w.started), err)
		if err != nil {
			// Still remembered: the entity starts again with its shard, and passivates again.
			c.log.Warn("forgetting passivated entities failed", "entities", len(w.ops), "err", err)
		}
	case waitLoadEntities:
		c.recovery.store(now.Sub(w.started), err)
		op := w.ops[0]
		if err != nil {
			c.log.Warn("loading remembered entities failed; retried after shard-failure-backoff", "type", op.Type, "shard", op.Shard, "err", err)
		}
		c.eng.EntitiesLoaded(now, op.Type, op.Shard, op.Gen, idsUnder[shard.EntityID](res.Records, datadir.Prefix(datadir.FamilyEntity, op.Type, string(op.Shard))), err)
	case waitLoadShards:
		c.recovery.store(now.Sub(w.started), err)
		op := w.ops[0]
		if err != nil {
			c.log.Warn("loading remembered shards failed; retried after waiting-for-state-timeout", "type", op.Type, "err", err)
		}
		c.eng.ShardsLoaded(now, op.Type, idsUnder[shard.ID](res.Records, datadir.Prefix(datadir.FamilyShard, op.Type)), err)
	case waitTermRead, waitTermWrite:
		c.termAnswered(now, w, res)
	case waitTermSpread:
		c.termSpread(w, err)
	case waitDirectives:
		c.directivesRead(now, res)
	case waitDeparture:
		c.departureChecked(now, res)
	case waitDirectiveChange:
		c.directiveChanged(w.change, err)
	case waitHistory:
		c.history.writing = false
		if err != nil {
			c.log.Warn("placement history: records not stored", "records", w.records, "err", err)
		}
	case waitHistoryScan:
		c.historyScanned(now, w.typ, res)
	case waitRemindersLoad:
		c.remindersLoaded(now, w, res)
	case waitRemindersClaim:
		c.remindersClaimed(now, w, err)
	case waitReminderChange:
		c.reminderChanged(w, err)
	case waitReminderUpdate:
		c.reminderUpdated(now, w, err)
	case waitRemindersRescan:
		c.remindersRescanned(now, w, res)
	case waitRemindersAdopt:
		c.remindersAdopted(now, w, err)
	case waitReminderShardMark:
		c.reminderShardMarked(now, w, err)
	}
}

// tickStore retries what is due: coordinator terms, the directives' refresh, history
// pruning.
func (c *Core) tickStore(now time.Time) {
	for _, typ := range c.eng.Types() { // sorted: requests go out in the same order every run
		if tc := c.terms[typ]; tc != nil && !tc.inFlight && !now.Before(tc.retryAt) {
			c.retryTerm(typ, tc)
		}
		c.spreadTermIfDue(now, typ)
	}
	c.refreshDirectivesIfDue(now)
	c.pruneHistoryIfDue(now)
}

// flushStore starts what became due while the machines' outputs were carried out.
func (c *Core) flushStore() {
	c.refreshDirectivesIfDue(c.now)
	c.writeHistory()
}

// storeOps carries out what the engine asks of the store of remembered entities: the
// remembers of one Ready go out as one write, the forgets as another.
func (c *Core) storeOps(_ time.Time, ops []engine.StoreOp) {
	var remembers, forgets []engine.StoreOp
	for _, op := range ops {
		switch op.Kind {
		case engine.StoreRemember:
			remembers = append(remembers, op)
		case engine.StoreForget:
			forgets = append(forgets, op)
		case engine.StoreLoadEntities:
			c.request(StoreRequest{Scan: datadir.Prefix(datadir.FamilyEntity, op.Type, string(op.Shard)), IsScan: true},
				storeWait{kind: waitLoadEntities, ops: []engine.StoreOp{op}})
		case engine.StoreLoadShards:
			c.request(StoreRequest{Scan: datadir.Prefix(datadir.FamilyShard, op.Type), IsScan: true},
				storeWait{kind: waitLoadShards, ops: []engine.StoreOp{op}})
		}
	}
	if len(remembers) > 0 {
		ws := make([]remember.Write, 0, len(remembers))
		pf := make([]StatePrefetch, 0, len(remembers))
		for _, op := range remembers {
			ws = append(ws, remember.Write{Key: datadir.Key(datadir.FamilyEntity, op.Type, string(op.Shard), string(op.Entity))})
			if op.NewShard {
				ws = append(ws, remember.Write{Key: datadir.Key(datadir.FamilyShard, op.Type, string(op.Shard))})
			}
			if op.Epoch > 0 {
				pf = append(pf, StatePrefetch{Type: op.Type, Key: StateKey(op.Type, op.Shard, op.Entity), Epoch: op.Epoch})
			}
		}
		c.request(StoreRequest{Writes: ws, Prefetch: pf}, storeWait{kind: waitRemember, ops: remembers})
	}
	if len(forgets) > 0 {
		ws := make([]remember.Write, len(forgets))
		for i, op := range forgets {
			ws[i] = remember.Write{Key: datadir.Key(datadir.FamilyEntity, op.Type, string(op.Shard), string(op.Entity)), Delete: true}
		}
		c.request(StoreRequest{Writes: ws}, storeWait{kind: waitForget, ops: forgets})
	}
}

// remembered tells the engine which entities are remembered, grouped by shard generation
// in the order they were asked for.
func (c *Core) remembered(now time.Time, ops []engine.StoreOp, err error) {
	type key struct {
		typ   string
		shard shard.ID
		gen   uint64
	}
	groups := map[key][]shard.EntityID{}
	var order []key
	for _, op := range ops {
		k := key{op.Type, op.Shard, op.Gen}
		if groups[k] == nil {
			order = append(order, k)
		}
		groups[k] = append(groups[k], op.Entity)
	}
	for _, k := range order {
		c.eng.EntitiesRemembered(now, k.typ, k.shard, k.gen, groups[k], err)
	}
}

// idsUnder returns what follows prefix in the keys of recs.
func idsUnder[ID ~string](recs []remember.Record, prefix string) []ID {
	ids := make([]ID, 0, len(recs))
	for _, r := range recs {
		ids = append(ids, ID(strings.TrimPrefix(r.Key, prefix)))
	}
	return ids
}

// A coordinator's term (see terms.go): read the last one claimed from a read quorum, write
// the next to a write quorum, then give it to the coordinator; tried again every
// termRetry until it is claimed or the coordinator here is another one.

// termRetry is the pause before a failed claim is tried again.
const termRetry = 500 * time.Millisecond

// termClaim is a coordinator's claim of its term in progress.
type termClaim struct {
	up       uint64
	inFlight bool
	retryAt  time.Time
	attempts int
}

// claimTerm starts claiming the term of the coordinator of typ that started here as
// up-number up.
func (c *Core) claimTerm(typ string, up uint64) {
	tc := &termClaim{up: up}
	c.terms[typ] = tc
	c.readTerm(typ, tc)
}

func (c *Core) readTerm(typ string, tc *termClaim) {
	tc.inFlight = true
	c.request(StoreRequest{Get: datadir.Key(datadir.FamilyTerm, typ)}, storeWait{kind: waitTermRead, typ: typ, up: tc.up})
}

// retryTerm tries a failed claim again, if the coordinator that wants it still runs here.
func (c *Core) retryTerm(typ string, tc *termClaim) {
	if co := c.eng.Coordinator(typ); co == nil || co.UpNumber() != tc.up {
		delete(c.terms, typ)
		return
	}
	c.readTerm(typ, tc)
}

// termAnswered takes the answer of a term read or write.
func (c *Core) termAnswered(now time.Time, w storeWait, res StoreResult) {
	tc := c.terms[w.typ]
	if tc == nil || tc.up != w.up {
		return // another coordinator's claim since
	}
	tc.inFlight = false
	err := res.Err
	if err == nil && w.kind == waitTermRead {
		var stored uint64
		if res.Found {
			if stored, err = strconv.ParseUint(string(res.Record.Value), 10, 64); err != nil {
				err = errors.New("the stored coordinator term " + strconv.Quote(string(res.Record.Value)) + " is not a number")
			}
		}
		var term uint64
		if err == nil {
			term, err = nextTerm(stored, w.up)
		}
		if err == nil {
			tc.inFlight = true
			c.request(termWrite(w.typ, term), storeWait{kind: waitTermWrite, typ: w.typ, up: w.up, term: term, holders: c.replicaCount()})
			return
		}
	}
	if err == nil { // written
		delete(c.terms, w.typ)
		c.claimed[w.typ] = &claimedTerm{up: w.up, term: w.term, holders: w.holders, at: now}
		c.eng.SetCoordinatorTerm(now, w.typ, w.up, w.term)
		c.log.Info("coordinator term claimed", "type", w.typ, "term", w.term)
		return
	}
	if tc.attempts%10 == 0 {
		c.log.Warn("coordinator term not claimed yet; the coordinator waits", "type", w.typ, "err", err)
	}
	tc.attempts++
	tc.retryAt = now.Add(termRetry)
}

// termWrite is the write of term as the last one claimed for typ. Its epoch is the term: a
// replica refuses it over a higher term, and the merge keeps the highest, so a slow or
// repeated write never takes the stored term back.
func termWrite(typ string, term uint64) StoreRequest {
	return StoreRequest{Writes: []remember.Write{{Key: datadir.Key(datadir.FamilyTerm, typ), Value: strconv.AppendUint(nil, term, 10), Epoch: term}}}
}

// A claimed term is written again as the cluster grows. A coordinator claims its term when
// it starts, often on the first member, alone: the write reaches that member only, and
// the members that join later get it only when anti-entropy happens to carry it over. A
// restarted cluster's coordinator reads the last term from a majority of the last cluster,
// which need not hold it; it would claim a term issued before, and every save fenced under
// the epochs of that term would be refused (TestRuntimeSoak, seed 397). So while the
// coordinator runs here, its term is written again, once a second at most, whenever more
// members hold the metadata than when it was last written.

// termSpreadEvery is the least time between two writes of a claimed term.
const termSpreadEvery = time.Second

// claimedTerm is the term a coordinator that runs here claimed, and how many members held
// replicas when it was last written.
type claimedTerm struct {
	up, term uint64
	holders  int
	at       time.Time
	inFlight bool
}

// replicaCount is how many members hold the metadata, terms among it, now: the voters
// (placementOf). The metadata's stored set follows them by joint changes whose new members
// refill first; writing the term again as they grow is the belt to those braces.
func (c *Core) replicaCount() int {
	if v := c.view.Load(); v != nil && v.placement != nil {
		return len(v.placement.Meta())
	}
	return 0
}

// spreadTermIfDue writes the term claimed for typ again when the members holding replicas
// grew since it was last written; it forgets the claim once its coordinator stopped here.
func (c *Core) spreadTermIfDue(now time.Time, typ string) {
	ct := c.claimed[typ]
	if ct == nil {
		return
	}
	if co := c.eng.Coordinator(typ); co == nil || co.UpNumber() != ct.up {
		delete(c.claimed, typ)
		return
	}
	n := c.replicaCount()
	if ct.inFlight || n <= ct.holders || now.Sub(ct.at) < termSpreadEvery {
		return
	}
	ct.inFlight, ct.at = true, now
	c.request(termWrite(typ, ct.term), storeWait{kind: waitTermSpread, typ: typ, up: ct.up, term: ct.term, holders: n})
}

// termSpread takes the answer of a claimed term written again.
func (c *Core) termSpread(w storeWait, err error) {
	ct := c.claimed[w.typ]
	if ct == nil || ct.up != w.up {
		return
	}
	ct.inFlight = false
	if err != nil {
		c.log.Debug("coordinator term not written again; tried again as the cluster grows", "type", w.typ, "err", err)
		return
	}
	ct.holders = w.holders
}

// The operator's directives (see directives.go): every member reads them all (a majority
// read) when it starts, when a coordinator starts here, when a member announces a change on
// the sharding-events topic, and every directiveRefresh in case an announcement was lost.

// directiveState is the refresh of the directives.
type directiveState struct {
	due      bool      // a read was asked for
	next     time.Time // the periodic read
	inFlight bool
	// Told the outcome of the read in flight, and of the next one (a change written while
	// a read is in flight waits for the next: that one surely sees it).
	inFlightWaiters, nextWaiters []func(error)
	// reader verifies what is read against the member's admin set (signeddirectives.go).
	reader directiveReader
}

// wantDirectives asks for a read of the directives now.
func (c *Core) wantDirectives() { c.directives.due = true }

// readDirectives asks for a read of the directives that starts now and tells done the
// directives as that read found them, or its error.
func (c *Core) readDirectives(done func(engine.Directives, error)) {
	c.directives.nextWaiters = append(c.directives.nextWaiters, func(err error) {
		d, _ := c.eng.Directives() // the read just given to the engine (directivesRead)
		done(d, err)
	})
	c.wantDirectives()
}

// refreshDirectivesIfDue starts a read of the directives when one is due.
func (c *Core) refreshDirectivesIfDue(now time.Time) {
	d := &c.directives
	if d.inFlight || (!d.due && now.Before(d.next)) {
		return
	}
	d.due, d.inFlight = false, true
	d.inFlightWaiters, d.nextWaiters = d.nextWaiters, nil
	c.request(StoreRequest{Scan: datadir.Prefix(datadir.FamilyDirective), IsScan: true}, storeWait{kind: waitDirectives})
}

// directivesRead takes the directives read from the store and gives them to the engine if
// they changed.
func (c *Core) directivesRead(now time.Time, res StoreResult) {
	d := &c.directives
	d.inFlight = false
	waiting := d.inFlightWaiters
	d.inFlightWaiters = nil
	err := res.Err
	if err != nil {
		c.log.Debug("directives not read; trying again", "err", err)
		d.next = now.Add(500 * time.Millisecond)
		err = errors.Join(errors.New("read the operator's directives"), err)
	} else {
		dir := c.directives.reader.read(res.Records)
		if len(dir.Stopped) == 0 {
			c.stoppedTypes.Store(nil) // the common case: senders check one pointer, no map
		} else {
			stopped := maps.Clone(dir.Stopped)
			c.stoppedTypes.Store(&stopped)
		}
		if old, known := c.eng.Directives(); !known || !reflect.DeepEqual(old, dir) {
			c.eng.SetDirectives(now, dir)
		}
		d.next = now.Add(directiveRefresh)
	}
	for _, done := range waiting {
		done(err)
	}
}

// changeDirective stores a change of the operator's directives, the request as its admin
// signed it (acknowledged by a write quorum), announces it, and reads the directives back
// before telling done. A change this member would not follow itself is refused.
func (c *Core) changeDirective(signed []byte, done func(error)) {
	sd, err := openDirective(c.cfg.Trust, signed)
	if err != nil {
		done(fmt.Errorf("directive: %w", err))
		return
	}
	c.request(StoreRequest{Writes: []remember.Write{{Key: sd.key(), Value: signed}}},
		storeWait{kind: waitDirectiveChange, change: &directiveChange{directive: sd, done: done}})
}

// directiveChange is a change of a directive being stored.
type directiveChange struct {
	directive signedDirective
	done      func(error)
}

func (c *Core) directiveChanged(ch *directiveChange, err error) {
	what := ch.directive.change
	if err != nil {
		ch.done(fmt.Errorf("%s: store the directive: %w", what, err))
		return
	}
	c.log.Info("operator directive changed", "directive", what.String(), "signer", ch.directive.signer)
	se := wire.ShardingEvent{Type: what.Type, Kind: pb.ShardingEvent_DIRECTIVE_CHANGED, Cause: what.String(), At: c.now, Origin: c.self.Node}
	c.env.Publish(se)
	c.env.Gossip(wire.AppendEvent(nil, se))
	c.directives.nextWaiters = append(c.directives.nextWaiters, ch.done)
	c.wantDirectives()
}

// shardingEvent takes another member's sharding event: subscribers see it, a directive
// change makes this member read the directives, and a shard allocation is a hint for the
// regions here (accepted only from the coordinator a region follows, and only if newer than
// what it knows: correctness never depends on gossip).
func (c *Core) shardingEvent(now time.Time, se wire.ShardingEvent) {
	c.env.Publish(se)
	switch se.Kind {
	case pb.ShardingEvent_DIRECTIVE_CHANGED:
		c.wantDirectives()
	case pb.ShardingEvent_STORE_DEPARTING:
		if se.Origin != c.self.Node {
			c.markDeparting(se.Origin, se.Incarnation, now)
		}
	case pb.ShardingEvent_SHARD_ALLOCATED:
		c.eng.StepCoordination(now, se.Origin, se.Type, coordinator.ShardHome{Shard: se.Shard, Region: se.To, Epoch: se.Epoch})
	}
}

// The placement history (see history.go): records queue here (bounded: when the store does
// not keep up they are dropped and counted) and go out in batches, one write at a time;
// every historyPruneEvery the history of the types whose coordinator runs here is pruned.

// historyState is the history's queue and pruning.
type historyState struct {
	queue     []PlacementRecord
	dropped   uint64
	writing   bool
	pruneNext time.Time
}

// recordPlacement queues a record of an allocation made by a coordinator here.
func (c *Core) recordPlacement(typ string, e coordinator.ShardAllocated, now time.Time) {
	h := &c.history
	if c.cfg.History.MaxPerShard <= 0 {
		return
	}
	if len(h.queue) >= historyQueue {
		h.dropped++
		if h.dropped%1000 == 1 {
			c.log.Warn("placement history: records dropped, the store does not keep up", "dropped", h.dropped)
		}
		return
	}
	h.queue = append(h.queue, PlacementRecord{At: now, Type: typ, Shard: e.Shard, From: e.From, To: e.Region, Epoch: e.Epoch,
		Cause: e.Cause, Handoff: e.Took, Entities: e.Entities, Coordinator: c.self.Node})
}

// writeHistory writes the next batch of queued records when no write is in flight.
func (c *Core) writeHistory() {
	h := &c.history
	if h.writing || len(h.queue) == 0 {
		return
	}
	n := min(len(h.queue), historyBatch)
	ws := make([]remember.Write, n)
	for i, r := range h.queue[:n] {
		ws[i] = historyWrite(r)
	}
	h.queue = h.queue[:copy(h.queue, h.queue[n:])]
	h.writing = true
	c.request(StoreRequest{Writes: ws}, storeWait{kind: waitHistory, records: n})
}

// pruneHistoryIfDue reads the history of the types whose coordinator runs here, to prune it,
// every historyPruneEvery.
func (c *Core) pruneHistoryIfDue(now time.Time) {
	h := &c.history
	if c.cfg.History.MaxPerShard <= 0 {
		return
	}
	if h.pruneNext.IsZero() {
		h.pruneNext = now.Add(historyPruneEvery)
		return
	}
	if now.Before(h.pruneNext) {
		return
	}
	h.pruneNext = now.Add(historyPruneEvery)
	for _, typ := range c.eng.Types() {
		if c.eng.Coordinator(typ) != nil {
			c.request(StoreRequest{Scan: datadir.Prefix(datadir.FamilyHistory, typ), IsScan: true}, storeWait{kind: waitHistoryScan, typ: typ})
		}
	}
}

// historyScanned queues the removal of the records of typ beyond the limits.
func (c *Core) historyScanned(now time.Time, typ string, res StoreResult) {
	if res.Err != nil {
		c.log.Debug("placement history: not pruned", "type", typ, "err", res.Err)
		return
	}
	recs := parseHistory(res.Records, c.log)
	for _, r := range expiredHistory(recs, now, c.cfg.History) {
		if len(c.history.queue) >= historyQueue {
			break // the next pruning removes the rest
		}
		c.history.queue = append(c.history.queue, PlacementRecord{Type: r.Type, Shard: r.Shard, Epoch: r.Epoch, deleted: true})
	}
}

// historyWrite is the write of a record, or of its removal.
func historyWrite(r PlacementRecord) remember.Write {
	if r.deleted {
		return remember.Write{Key: historyKey(r.Type, r.Shard, r.Epoch), Delete: true}
	}
	v, _ := json.Marshal(r) // plain fields: cannot fail
	return remember.Write{Key: historyKey(r.Type, r.Shard, r.Epoch), Value: v}
}
