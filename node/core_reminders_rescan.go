package node

import (
	"errors"
	"time"

	"github.com/shardmesh/shardmesh/datadir"
	"github.com/shardmesh/shardmesh/remember"
	"github.com/shardmesh/shardmesh/shard"
)

// A home reads its shard's reminders again now and then, and adopts the records it does not
// hold: those stored after its load read them. Its load is a snapshot, and a write can land
// after it — a register an earlier home issued before the handoff and the store completed
// after it, or one of this home that failed its quorum yet reached a majority. Such a record
// was never fired by anyone: the earlier home stopped the shard, and this one had read
// before it landed. Orleans' reminder service reads its table again on a timer for the same
// reason. The first read again comes reminderRescan after the claim, when every write of an
// earlier home has landed or timed out; then at doubling intervals up to reminderRescanMax:
// one prefix scan per hosted shard, seldom.
const (
	reminderRescan    = 15 * time.Second
	reminderRescanMax = 5 * time.Minute
)

// remindersLanded takes the keys of records other members wrote that landed in this
// member's replica of shards it hosts (StoreLanded): a shard with a reminder among them reads
// its reminders again at once, rather than at its next read on the timer (which can be
// minutes away) — a late landing is found when it happens.
func (c *Core) remindersLanded(keys []string) {
	for _, key := range keys {
		if !isReminderKey(key) {
			continue
		}
		u := StoreLayout{}.UnitOf(key)
		if rs := c.rem.shards[shardKey{u.Type, shard.ID(u.Shard)}]; rs != nil {
			rs.landed = true
			if !rs.rescanning {
				rs.rescanAt = time.Time{}
			}
		}
	}
}

// rescanDue reports whether rs should read its reminders again at now.
func (rs *reminderShard) rescanDue(now time.Time) bool {
	return rs.phase == remReady && !rs.rescanning && !now.Before(rs.rescanAt)
}

// rescanReminders reads a ready shard's reminders again. Reminders whose state changes here
// until the adoption ends (touched) keep the state this home gave them.
func (c *Core) rescanReminders(rs *reminderShard) {
	rs.rescanning, rs.touched, rs.landed = true, map[reminderID]bool{}, false
	c.request(StoreRequest{Scan: datadir.Prefix(datadir.FamilyReminder, rs.key.typ, string(rs.key.shard)), IsScan: true},
		storeWait{kind: waitRemindersRescan, typ: rs.key.typ, shard: rs.key.shard, up: uint64(rs.epoch)})
}

// touch notes that reminder id changed here while a read again is under way.
func (rs *reminderShard) touch(id reminderID) {
	if rs.touched != nil {
		rs.touched[id] = true
	}
}

// unknown reports whether the read again may adopt reminder id: this home neither holds it
// nor changed it since the read began, nor has a register or cancel of it in flight.
func (rs *reminderShard) unknown(id reminderID) bool {
	return rs.items[id] == nil && !rs.touched[id] && rs.changes[id] == nil
}

// remindersRescanned takes the read again: the records of this home's epoch it does not hold
// are held at once; those of an earlier epoch are claimed first, as at the load.
func (c *Core) remindersRescanned(now time.Time, w storeWait, res StoreResult) {
	rs := c.current(w.typ, w.shard, w.up)
	if rs == nil || !rs.rescanning {
		return
	}
	if res.Err != nil {
		c.rescanned(now, rs)
		return
	}
	var claims []remember.Write
	adopt := map[reminderID]Reminder{}
	for _, rec := range res.Records {
		r, err := ParseReminder(w.typ, rec)
		if err != nil {
			continue // the load logged it
		}
		id := reminderID{r.Entity, r.Name}
		switch {
		case !rs.unknown(id), r.Epoch > uint64(rs.epoch): // a newer home's: it fires it
		case r.Epoch == uint64(rs.epoch):
			c.adoptReminder(rs, id, r)
		default:
			adopt[id] = r
			claims = append(claims, remember.Write{Key: rec.Key, Value: rec.Value, Epoch: uint64(rs.epoch)})
		}
	}
	if len(claims) == 0 {
		c.rescanned(now, rs)
		return
	}
	rs.adopting = adopt
	c.request(StoreRequest{Writes: claims}, storeWait{kind: waitRemindersAdopt, typ: w.typ, shard: w.shard, up: w.up})
}

// remindersAdopted takes the outcome of the claim of reminders found by a read again.
func (c *Core) remindersAdopted(now time.Time, w storeWait, err error) {
	rs := c.current(w.typ, w.shard, w.up)
	if rs == nil || !rs.rescanning {
		return
	}
	if errors.Is(err, remember.ErrFenced) {
		c.log.Info("reminders claimed by a newer home of the shard; not fired here", "type", w.typ, "shard", w.shard, "epoch", rs.epoch.String())
		c.remindersStopped(w.typ, w.shard)
		return
	}
	if err == nil {
		for id, r := range rs.adopting {
			if rs.unknown(id) {
				r.Epoch = uint64(rs.epoch)
				c.adoptReminder(rs, id, r)
			}
		}
	}
	c.rescanned(now, rs) // a failed claim: the next read again finds them
}

// adoptReminder holds a reminder found by a read again.
func (c *Core) adoptReminder(rs *reminderShard, id reminderID, r Reminder) {
	rs.items[id] = &reminderItem{r: r}
	rs.wake = time.Time{}
	c.metrics.remindersHeld(rs.key.typ, 1)
	c.metrics.remindersAdopted(rs.key.typ)
}

// rescanned ends a read again and schedules the next.
func (c *Core) rescanned(now time.Time, rs *reminderShard) {
	rs.rescanning, rs.touched, rs.adopting = false, nil, nil
	rs.rescans++
	rs.rescanAt = now.Add(backoff(reminderRescan, reminderRescanMax, rs.rescans))
	if rs.landed { // during the read: it may have read before the record landed
		rs.rescanAt = now
	}
}
