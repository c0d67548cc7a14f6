package node

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/shardmesh/shardmesh/coordinator"
	"github.com/shardmesh/shardmesh/datadir"
	"github.com/shardmesh/shardmesh/region"
	"github.com/shardmesh/shardmesh/remember"
	"github.com/shardmesh/shardmesh/shard"
)

// The durable reminders of the shards hosted here (reminders.go): when a shard starts here
// the core reads its reminders (a scan of rm␀TYPE␀SHARD␀) and claims them, rewriting every
// record of an older epoch with the shard's epoch — from then on an update by an earlier
// home is refused by the replicas (remember.ErrFenced). Then the shard's reminders fire
// by the core's clock (Tick), only while the member serves and the shard is hosted here
// with that epoch: a due reminder's message goes to its entity as an ask of the core (a
// passivated entity starts on it); once handled, the record is rescheduled or removed with
// a write fenced by the epoch. A failed or unanswered firing is tried again (at least
// once). The entities' operations (register, cancel, list) wait for the claim.

// Pauses and bounds of reminders.
const (
	reminderRetry      = time.Second      // a failed load, claim, firing or update is tried again after it
	reminderRetryMax   = time.Minute      // ... doubling up to this
	reminderAskTimeout = 30 * time.Second // a firing not answered by then is tried again
	// ReminderLateAfter: a reminder fired this long after its scheduled time counts as late
	// (shardmesh_reminders_late_total).
	ReminderLateAfter = time.Second
)

// reminderPhase is where a shard's reminders are.
type reminderPhase uint8

const (
	remLoading  reminderPhase = iota + 1 // the scan is in flight (or waits for retryAt)
	remClaiming                          // the claim write is in flight
	remReady                             // claimed: they fire
)

// shardKey names a shard of a type.
type shardKey struct {
	typ   string
	shard shard.ID
}

// reminderShard is the reminders of one shard hosted here with epoch.
type reminderShard struct {
	key      shardKey
	epoch    coordinator.Epoch
	phase    reminderPhase
	inFlight bool      // remLoading: the scan is in flight
	retryAt  time.Time // remLoading: the next scan
	failures int
	items    map[reminderID]*reminderItem
	changes  map[reminderID]*reminderChanges // registers and cancels in flight
	waiting  []ReminderOp                    // until ready
	marked   bool                            // the shard is stored as one that must run (markReminderShard)
	marking  []ReminderOp                    // registers waiting for that
	wake     time.Time                       // remReady: nothing is due before (zero: look now)
	due      int                             // reminders whose time has come, not yet handled and stored
	stale    *atomic.Bool                    // the flag of the firings sent since the shard was last hosted with epoch (staleFirings)

	// The reads again (core_reminders_rescan.go): the next one, how many were done, and
	// while one is under way the reminders changed here since it began and those it claims.
	rescanAt   time.Time
	rescans    int
	rescanning bool
	landed     bool // a reminder record landed since the last read began: read again at once
	touched    map[reminderID]bool
	adopting   map[reminderID]Reminder
}

// reminderID names a reminder within its shard.
type reminderID struct {
	entity shard.EntityID
	name   string
}

// reminderChanges are the registers and cancels of one reminder in flight: how many, and
// the last one whose outcome the home took (their outcomes may come out of order: a failure
// comes at its timeout).
type reminderChanges struct {
	inFlight int
	taken    uint64
}

// reminderItem is one reminder of a shard hosted here.
type reminderItem struct {
	r        Reminder
	seq      uint64    // the firing in flight (results of others are dropped)
	firing   bool      // its message is on its way to the entity
	firedAt  time.Time // when that firing started
	writing  bool      // its update (reschedule, removal) is in flight
	update   *remember.Write
	retryAt  time.Time
	failures int
}

// reminderResult is the answer to a firing (reminderAsk.Resolve), taken on the next tick.
type reminderResult struct {
	key shardKey
	id  reminderID
	seq uint64
	err error
}

// coreReminders is the core's state of reminders.
type coreReminders struct {
	shards map[shardKey]*reminderShard
	order  []shardKey // the keys of shards, sorted
	seq    uint64

	mu      sync.Mutex // results come from entity workers and stream readers
	results []reminderResult
}

// reminderAsk is a firing's ask: its answer is queued for the core's next tick.
type reminderAsk struct {
	id  uint64
	c   *Core
	res reminderResult
}

func (a *reminderAsk) ID() uint64 { return a.id }

// Resolve queues the firing's outcome (the Asker contract: any goroutine, never blocks).
func (a *reminderAsk) Resolve(r Reply) {
	res := a.res
	res.err = r.Err
	rm := &a.c.rem
	rm.mu.Lock()
	rm.results = append(rm.results, res)
	rm.mu.Unlock()
}

// remindersStarted starts loading the reminders of a shard that started here with epoch.
func (c *Core) remindersStarted(typ string, s shard.ID, epoch coordinator.Epoch) {
	k := shardKey{typ, s}
	c.remindersStopped(typ, s)
	rs := &reminderShard{key: k, epoch: epoch, phase: remLoading, items: map[reminderID]*reminderItem{}}
	if c.rem.shards == nil {
		c.rem.shards = map[shardKey]*reminderShard{}
	}
	c.rem.shards[k] = rs
	i, _ := slices.BinarySearchFunc(c.rem.order, k, compareShardKeys)
	c.rem.order = slices.Insert(c.rem.order, i, k)
	c.loadReminders(rs)
}

// remindersStopped drops the reminders of a shard that stopped here.
func (c *Core) remindersStopped(typ string, s shard.ID) {
	k := shardKey{typ, s}
	if rs := c.rem.shards[k]; rs != nil {
		rs.staleFirings()
		failOps(rs.waiting, ErrNotHome)
		failOps(rs.marking, ErrNotHome)
		delete(c.rem.shards, k)
		if i, ok := slices.BinarySearchFunc(c.rem.order, k, compareShardKeys); ok {
			c.rem.order = slices.Delete(c.rem.order, i, i+1)
		}
		c.metrics.remindersHeld(typ, -len(rs.items))
	}
}

func (c *Core) loadReminders(rs *reminderShard) {
	rs.inFlight = true
	c.request(StoreRequest{Scan: datadir.Prefix(datadir.FamilyReminder, rs.key.typ, string(rs.key.shard)), IsScan: true},
		storeWait{kind: waitRemindersLoad, typ: rs.key.typ, shard: rs.key.shard, up: uint64(rs.epoch)})
}

// current returns the reminders of shard typ/s if they are still those of epoch.
func (c *Core) current(typ string, s shard.ID, epoch uint64) *reminderShard {
	rs := c.rem.shards[shardKey{typ, s}]
	if rs == nil || uint64(rs.epoch) != epoch {
		return nil
	}
	return rs
}

// remindersLoaded takes the scan of a shard's reminders and claims them.
func (c *Core) remindersLoaded(now time.Time, w storeWait, res StoreResult) {
	rs := c.current(w.typ, w.shard, w.up)
	if rs == nil || rs.phase != remLoading {
		return
	}
	rs.inFlight = false
	if res.Err != nil {
		c.reminderShardFailed(now, rs, "load", res.Err)
		return
	}
	var claims []remember.Write
	for _, rec := range res.Records {
		r, err := ParseReminder(w.typ, rec)
		if err != nil {
			c.log.Warn("a stored reminder is skipped", "type", w.typ, "shard", w.shard, "err", err)
			continue
		}
		rs.items[reminderID{r.Entity, r.Name}] = &reminderItem{r: r}
		if r.Epoch < uint64(rs.epoch) {
			claims = append(claims, remember.Write{Key: rec.Key, Value: rec.Value, Epoch: uint64(rs.epoch)})
		}
	}
	c.metrics.remindersHeld(w.typ, len(rs.items))
	if len(claims) == 0 {
		c.remindersReady(now, rs)
		return
	}
	rs.phase = remClaiming
	c.request(StoreRequest{Writes: claims}, storeWait{kind: waitRemindersClaim, typ: w.typ, shard: w.shard, up: w.up})
}

// remindersClaimed takes the outcome of a claim.
func (c *Core) remindersClaimed(now time.Time, w storeWait, err error) {
	rs := c.current(w.typ, w.shard, w.up)
	if rs == nil || rs.phase != remClaiming {
		return
	}
	if errors.Is(err, remember.ErrFenced) {
		c.log.Info("reminders claimed by a newer home of the shard; not fired here", "type", w.typ, "shard", w.shard, "epoch", rs.epoch.String())
		c.remindersStopped(w.typ, w.shard)
		return
	}
	if err != nil {
		c.metrics.remindersHeld(w.typ, -len(rs.items))
		clear(rs.items)
		rs.phase = remLoading
		c.reminderShardFailed(now, rs, "claim", err)
		return
	}
	for _, it := range rs.items {
		it.r.Epoch = uint64(rs.epoch)
	}
	c.remindersReady(now, rs)
}

// reminderShardFailed schedules another load of a shard's reminders.
func (c *Core) reminderShardFailed(now time.Time, rs *reminderShard, what string, err error) {
	if rs.failures%10 == 0 {
		c.log.Warn("reminders of a shard not "+what+"ed yet; tried again", "type", rs.key.typ, "shard", rs.key.shard, "err", err)
	}
	rs.retryAt = now.Add(backoff(reminderRetry, reminderRetryMax, rs.failures))
	rs.failures++
}

// remindersReady makes a shard's claimed reminders fire, and carries out the entities'
// operations that waited for them.
func (c *Core) remindersReady(now time.Time, rs *reminderShard) {
	rs.phase, rs.failures = remReady, 0
	rs.rescanAt = now.Add(reminderRescan)
	if rs.landed { // after the load read: the load may have missed it
		rs.rescanAt = now
	}
	c.env.Publish(RemindersClaimed{Type: rs.key.typ, Shard: rs.key.shard, Epoch: rs.epoch, Reminders: len(rs.items)})
	ops := rs.waiting
	rs.waiting = nil
	for _, op := range ops {
		c.reminderOp(now, op)
	}
}

// RemindersClaimed is published (Env.Publish) when this member claimed the reminders of a
// shard it hosts with Epoch: from then on it fires them.
type RemindersClaimed struct {
	Type      string
	Shard     shard.ID
	Epoch     coordinator.Epoch
	Reminders int
}

// ReminderFired is published when this member fires a reminder.
type ReminderFired struct {
	Reminder Reminder // Epoch: the shard's epoch here
	At       time.Time
}

// reminderOp carries out an entity's reminder operation.
func (c *Core) reminderOp(now time.Time, op ReminderOp) {
	r := op.Reminder
	rs := c.rem.shards[shardKey{r.Type, r.Shard}]
	// An incarnation keeps the epoch it started with when this member is given its shard
	// again with a newer one: its operations count under the shard's epoch here.
	if rs == nil || rs.epoch < op.Epoch {
		op.Done(nil, fmt.Errorf("reminder of %s %s: %w (shard %s)", r.Type, r.Entity, ErrNotHome, r.Shard))
		return
	}
	if rs.phase != remReady {
		rs.waiting = append(rs.waiting, op)
		return
	}
	switch op.Kind {
	case RemindList:
		var out []Reminder
		for id, it := range rs.items {
			if id.entity == r.Entity {
				out = append(out, it.r)
			}
		}
		slices.SortFunc(out, func(a, b Reminder) int { return cmp.Compare(a.Name, b.Name) })
		op.Done(out, nil)
	case RemindRegister, RemindCancel:
		if err := checkReminderName(r.Name); err != nil {
			op.Done(nil, err)
			return
		}
		key := reminderKey(r.Type, r.Shard, r.Entity, r.Name)
		r.Epoch = uint64(rs.epoch)
		ws := []remember.Write{{Key: key, Delete: true, Epoch: r.Epoch}}
		if op.Kind == RemindRegister {
			if r.Every < 0 {
				op.Done(nil, fmt.Errorf("reminder %s: negative period %v", r.Name, r.Every))
				return
			}
			if !rs.marked {
				c.markReminderShard(rs, op)
				return
			}
			r.Payload, r.Due = nonNil(r.Payload), now.Add(max(op.After, 0))
			ws[0] = remember.Write{Key: key, Value: encodeReminder(&r), Epoch: r.Epoch}
		}
		opc := op
		opc.Reminder = r
		c.rem.seq++
		id := reminderID{r.Entity, r.Name}
		if rs.changes == nil {
			rs.changes = map[reminderID]*reminderChanges{}
		}
		if rs.changes[id] == nil {
			rs.changes[id] = &reminderChanges{}
		}
		rs.changes[id].inFlight++
		c.request(StoreRequest{Writes: ws}, storeWait{kind: waitReminderChange, typ: r.Type, shard: r.Shard, up: r.Epoch, reminder: &opc, seq: c.rem.seq})
	default:
		panic(fmt.Sprintf("node: unknown reminder operation %d", op.Kind))
	}
}

// markReminderShard stores, before the shard's first register here, that the shard is one
// that must run: its coordinator starts it again when its home is lost
// (coordinator.Config.DurableShards), and the home fires its reminders. The register waits
// for it: written together, a register whose write failed could land on a replica without
// the mark, and a shard nobody starts fires nothing (reminder soak seed 118: a register
// made in a minority partition stayed on its home's replica, unfired, after the full
// restart). A failed mark fails the register with nothing stored. Unfenced, as the
// remembered entities write it; once per shard and epoch.
func (c *Core) markReminderShard(rs *reminderShard, op ReminderOp) {
	rs.marking = append(rs.marking, op)
	if len(rs.marking) > 1 {
		return
	}
	c.request(StoreRequest{Writes: []remember.Write{{Key: datadir.Key(datadir.FamilyShard, rs.key.typ, string(rs.key.shard))}}},
		storeWait{kind: waitReminderShardMark, typ: rs.key.typ, shard: rs.key.shard, up: uint64(rs.epoch)})
}

// reminderShardMarked takes the outcome of markReminderShard.
func (c *Core) reminderShardMarked(now time.Time, w storeWait, err error) {
	rs := c.current(w.typ, w.shard, w.up)
	if rs == nil {
		return
	}
	ops := rs.marking
	rs.marking = nil
	if err != nil {
		failOps(ops, fmt.Errorf("the shard is not stored as one that must run, so nothing was registered: %w", err))
		return
	}
	rs.marked = true
	for _, op := range ops {
		c.reminderOp(now, op)
	}
}

// reminderChanged takes the outcome of a register or a cancel. A register that failed may
// have been stored all the same (a write the replicas took but did not acknowledge in time):
// the home holds it as registered, so that the record, if stored, fires and is removed
// (or rescheduled) by the update of its firing, fenced by the shard's epoch, rather than
// wait for the shard's next home — which a home that keeps the shard never gives it. Before,
// such a record stayed stored and unfired (reminder soak seed 1: r228 and r546 of c17 on
// every replica at the home's own epoch). A failed cancel changes nothing here: the reminder
// may fire once more, and its update stores it as the home holds it. Only the operation of a
// reminder issued after those whose outcomes were taken changes what the home holds: an
// earlier one's outcome, which may come later (a failure at its timeout), is older than what
// the store keeps.
func (c *Core) reminderChanged(w storeWait, err error) {
	op := w.reminder
	rs := c.current(w.typ, w.shard, w.up)
	id := reminderID{op.Reminder.Entity, op.Reminder.Name}
	if ch := rs.changesOf(id); ch != nil {
		if ch.inFlight--; ch.inFlight == 0 {
			delete(rs.changes, id)
		}
		if w.seq < ch.taken {
			rs = nil
		}
		ch.taken = max(ch.taken, w.seq)
	}
	if err != nil {
		if rs != nil && op.Kind == RemindRegister && !errors.Is(err, remember.ErrFenced) {
			c.reminderHeld(rs, op, id)
			err = fmt.Errorf("%w (the reminder may have been stored: then it fires)", err)
		}
		op.Done(nil, fmt.Errorf("reminder %s of %s %s: %w", op.Reminder.Name, op.Reminder.Type, op.Reminder.Entity, err))
		return
	}
	if rs != nil {
		c.reminderHeld(rs, op, id)
	}
	op.Done(nil, nil)
}

// changesOf returns the registers and cancels of id in flight (nil for a nil rs).
func (rs *reminderShard) changesOf(id reminderID) *reminderChanges {
	if rs == nil {
		return nil
	}
	return rs.changes[id]
}

// reminderHeld makes the home hold what a register or a cancel of reminder id stored.
func (c *Core) reminderHeld(rs *reminderShard, op *ReminderOp, id reminderID) {
	rs.wake = time.Time{}
	rs.touch(id)
	_, had := rs.items[id]
	switch {
	case op.Kind == RemindCancel && had:
		delete(rs.items, id)
		c.metrics.remindersHeld(rs.key.typ, -1)
	case op.Kind == RemindRegister:
		rs.items[id] = &reminderItem{r: op.Reminder} // a firing in flight of the one it replaces is dropped
		if !had {
			c.metrics.remindersHeld(rs.key.typ, 1)
		}
	}
}

// tickReminders takes the firings' answers, then fires what is due and retries what
// failed, while this member serves. A shard is looked at only when something of it may be
// due (wake).
func (c *Core) tickReminders(now time.Time) {
	rm := &c.rem
	rm.mu.Lock()
	results := rm.results
	rm.results = nil
	rm.mu.Unlock()
	for _, res := range results {
		c.reminderAnswered(now, res)
	}
	serving := c.servingUntil.After(now)
	for _, k := range rm.order { // sorted: the same order every run
		rs := rm.shards[k]
		switch {
		case rs.phase == remLoading:
			if !rs.inFlight && !now.Before(rs.retryAt) {
				c.loadReminders(rs)
			}
			continue
		case !c.hostsWith(k, rs.epoch):
			rs.staleFirings() // handing the shard off, or handed off
			continue
		case rs.phase == remClaiming, now.Before(rs.wake) && !rs.rescanDue(now), !serving:
			continue
		}
		if rs.rescanDue(now) {
			c.rescanReminders(rs)
		}
		if !now.Before(rs.wake) {
			c.runReminders(now, rs)
		}
	}
}

// runReminders fires a ready shard's due reminders and retries its failed updates; wake
// becomes the next time something of the shard is due.
func (c *Core) runReminders(now time.Time, rs *reminderShard) {
	wake := now.Add(time.Hour)
	at := func(t time.Time) {
		if t.Before(wake) {
			wake = t
		}
	}
	rs.due = 0
	for _, id := range slices.SortedFunc(maps.Keys(rs.items), compareReminderIDs) {
		it := rs.items[id]
		switch {
		case it.writing:
			rs.due++
		case it.update != nil:
			rs.due++
			if !now.Before(it.retryAt) {
				c.writeReminderUpdate(rs, id, it)
			} else {
				at(it.retryAt)
			}
		case it.firing:
			rs.due++
			if now.Sub(it.firedAt) >= reminderAskTimeout {
				it.firing = false
				c.reminderFailed(now, it, errors.New("not answered in time"))
				at(it.retryAt)
			} else {
				at(it.firedAt.Add(reminderAskTimeout))
			}
		case now.Before(it.r.Due):
			at(it.r.Due)
		default:
			rs.due++
			if now.Before(it.retryAt) {
				at(it.retryAt)
			} else {
				c.fireReminder(now, rs, it)
				at(it.firedAt.Add(reminderAskTimeout))
			}
		}
	}
	rs.wake = wake
}

// hostsWith reports whether the shard is hosted here with epoch and not being handed off.
func (c *Core) hostsWith(k shardKey, epoch coordinator.Epoch) bool {
	r := c.eng.Region(k.typ)
	if r == nil {
		return false
	}
	e, stopping, ok := r.LocalEpoch(k.shard)
	return ok && !stopping && e == epoch
}

// staleFirings flags every firing rs sent so far: this member no longer hosts the shard
// with rs's epoch (it hands it off, or handed it off). A firing queued for an incarnation
// that is slow to stop — its handoff timed out while it waited on a save — would otherwise
// be handled after the next home claimed the reminders (reminder soak seeds 249, 566),
// however the core took its outcome meanwhile (a firing answered or timed out can still
// sit in the mailbox). The worker refuses a flagged firing before the handler runs, and
// SaveState the save of one flagged while it was handled (ErrNotHome); the record stays,
// and the newest home fires it. Firings sent later, should the shard be hosted with the
// epoch again (a handoff given up), get a new flag.
func (rs *reminderShard) staleFirings() {
	if rs.stale != nil {
		rs.stale.Store(true)
	}
}

// firingsFlag is the flag of the firings rs sends now.
func (rs *reminderShard) firingsFlag() *atomic.Bool {
	if rs.stale == nil || rs.stale.Load() {
		rs.stale = new(atomic.Bool)
	}
	return rs.stale
}

// fireReminder sends a due reminder's message to its entity on this home. With the shard's
// epoch on its envelope (and on the message, for an incarnation that stops with it queued)
// it never leaves the member: should the shard move while it waits, the region refuses it
// (region.NotHomeError), the firing fails, and the new home fires the reminder itself — so
// every handling of a reminder's message has Firing set.
func (c *Core) fireReminder(now time.Time, rs *reminderShard, it *reminderItem) {
	c.rem.seq++
	it.seq, it.firing, it.firedAt = c.rem.seq, true, now
	r := it.r
	ask := &reminderAsk{id: c.asks.NewAskID(), c: c, res: reminderResult{key: rs.key, id: reminderID{r.Entity, r.Name}, seq: it.seq}}
	m := &Message{encoded: r.Payload, ask: ask, ext: &msgExt{firing: &Firing{Name: r.Name, Scheduled: r.Due, Fired: now, Every: r.Every}, home: rs.epoch, stale: rs.firingsFlag()}}
	late := now.Sub(r.Due)
	c.metrics.reminderFired(r.Type, late)
	if late >= ReminderLateAfter && it.failures == 0 {
		c.log.Debug("reminder fired late", "type", r.Type, "entity", r.Entity, "reminder", r.Name, "late", late.String())
	}
	fired := r
	fired.Epoch = uint64(rs.epoch)
	c.env.Publish(ReminderFired{Reminder: fired, At: now})
	if err := c.eng.Deliver(now, r.Type, region.Envelope{Shard: r.Shard, Entity: r.Entity, Payload: m, Epoch: rs.epoch}); err != nil {
		ask.Resolve(Reply{Err: err})
	}
}

// reminderAnswered takes the answer of a firing: handled, the reminder is rescheduled or
// removed; else it fires again after a pause.
func (c *Core) reminderAnswered(now time.Time, res reminderResult) {
	rs := c.rem.shards[res.key]
	if rs == nil {
		return
	}
	rs.wake = time.Time{}
	it := rs.items[res.id]
	if it == nil || !it.firing || it.seq != res.seq {
		return
	}
	it.firing = false
	if res.err != nil {
		c.reminderFailed(now, it, res.err)
		return
	}
	it.failures = 0
	w := remember.Write{Key: reminderKey(it.r.Type, it.r.Shard, it.r.Entity, it.r.Name), Delete: true, Epoch: uint64(rs.epoch)}
	if it.r.Every > 0 {
		next := it.r
		next.Due = nextDue(it.r.Due, it.r.Every, now)
		w.Value, w.Delete = encodeReminder(&next), false
	}
	it.update = &w
	c.writeReminderUpdate(rs, res.id, it)
}

func (c *Core) reminderFailed(now time.Time, it *reminderItem, err error) {
	if it.failures%10 == 0 {
		c.log.Warn("a reminder's message was not handled; it fires again", "type", it.r.Type, "entity", it.r.Entity, "reminder", it.r.Name, "err", err)
	}
	it.retryAt = now.Add(backoff(reminderRetry, reminderRetryMax, it.failures))
	it.failures++
}

// writeReminderUpdate writes a fired reminder's new record (or its removal), fenced by the
// shard's epoch.
func (c *Core) writeReminderUpdate(rs *reminderShard, id reminderID, it *reminderItem) {
	it.writing = true
	c.request(StoreRequest{Writes: []remember.Write{*it.update}},
		storeWait{kind: waitReminderUpdate, typ: rs.key.typ, shard: rs.key.shard, up: uint64(rs.epoch), remID: id, seq: it.seq})
}

// reminderUpdated takes the outcome of a fired reminder's update.
func (c *Core) reminderUpdated(now time.Time, w storeWait, err error) {
	rs := c.current(w.typ, w.shard, w.up)
	if rs == nil {
		return
	}
	rs.wake = time.Time{}
	it := rs.items[w.remID]
	if it == nil || !it.writing || it.seq != w.seq {
		return
	}
	it.writing = false
	rs.touch(w.remID)
	switch {
	case errors.Is(err, remember.ErrFenced):
		c.log.Info("a reminder's update was fenced off: the shard has a newer home", "type", w.typ, "shard", w.shard, "epoch", rs.epoch.String())
		c.remindersStopped(w.typ, w.shard)
	case err != nil:
		it.retryAt = now.Add(backoff(reminderRetry, reminderRetryMax, it.failures))
		it.failures++
	case it.update.Delete:
		delete(rs.items, w.remID)
		c.metrics.remindersHeld(w.typ, -1)
	default:
		next, _ := ParseReminder(w.typ, remember.Record{Key: it.update.Key, Value: it.update.Value, Version: remember.Version{Epoch: it.update.Epoch}})
		it.r, it.update = next, nil
	}
}

// backoff is base doubled n times, at most limit.
func backoff(base, limit time.Duration, n int) time.Duration {
	d := base
	for i := 0; i < n && d < limit; i++ {
		d *= 2
	}
	return min(d, limit)
}

// failOps tells waiting operations they will not be carried out.
func failOps(ops []ReminderOp, err error) {
	for _, op := range ops {
		op.Done(nil, fmt.Errorf("reminder of %s %s: %w", op.Reminder.Type, op.Reminder.Entity, err))
	}
}

func compareShardKeys(a, b shardKey) int {
	if c := cmp.Compare(a.typ, b.typ); c != 0 {
		return c
	}
	return cmp.Compare(string(a.shard), string(b.shard))
}

func compareReminderIDs(a, b reminderID) int {
	if c := cmp.Compare(string(a.entity), string(b.entity)); c != 0 {
		return c
	}
	return cmp.Compare(a.name, b.name)
}
