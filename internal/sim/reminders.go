package sim

import (
	"encoding/binary"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/shardmesh/shardmesh/coordinator"
	"github.com/shardmesh/shardmesh/datadir"
	"github.com/shardmesh/shardmesh/node"
	"github.com/shardmesh/shardmesh/shard"
)

// Durable reminders on the durable counters (SendRemind): a message asks its counter to
// register a one-shot reminder whose message is an increment; the counter answers once the
// registration is stored. The checks:
//
//   - at least once: every registration acknowledged fires, and its increment is saved (an
//     acknowledged save), by the end of the run (CheckReminders);
//   - no firing by a fenced-off home: a member fires (and its counter handles) a reminder
//     only with the newest epoch whose reminders any member claimed for the shard (a stale
//     claim alone is noted in the timeline, not a violation);
//   - the counters' bounds count every save of a reminder's increment (a reminder may fire
//     more than once: at least once, not exactly once).

// remindBit marks a reminder's increment among the messages (a msgID the traffic does not
// account for: its asker is the core).
const remindBit msgID = 1 << 62

// reminders is the simulation's bookkeeping of reminders.
type reminders struct {
	register map[msgID]time.Duration   // messages that register a reminder, and after what
	claims   map[shardKey]claim        // the newest claim of each shard's reminders
	entity   map[msgID]entityKey       // each reminder's counter
	acked    map[msgID]bool            // registrations acknowledged
	begun    map[msgID]int             // saves of each reminder's increment begun
	saved    map[msgID]int             // ... and acknowledged
	fired    int                       // firings seen
	firedBy  map[msgID]map[string]bool // the members that handled each reminder
	lastTerm map[string]termBy         // the highest coordinator term of each type's allocations, and whose
}

type claim struct {
	epoch coordinator.Epoch
	by    string
}

func newReminders() *reminders {
	return &reminders{register: map[msgID]time.Duration{}, claims: map[shardKey]claim{}, entity: map[msgID]entityKey{},
		acked: map[msgID]bool{}, begun: map[msgID]int{}, saved: map[msgID]int{}, firedBy: map[msgID]map[string]bool{}, lastTerm: map[string]termBy{}}
}

// SendRemind sends from node i a message that makes counter entity register a reminder
// firing after after (Options.Durable).
func (s *Sim) SendRemind(i int, typ string, entity shard.EntityID, after time.Duration) {
	s.rem.register[s.traffic.next+1] = after
	s.rem.entity[s.traffic.next+1] = entityKey{typ, entity}
	s.Send(i, typ, entity)
}

// remind registers the reminder m asks for, on the counter's turn, and answers m once it is
// stored (or failed).
func (c *counterState) remind(e *simEntity, id msgID, after time.Duration, done func(any, error)) {
	r := e.r
	payload := binary.BigEndian.AppendUint64(nil, uint64(id|remindBit))
	op := node.ReminderOp{Kind: node.RemindRegister, After: after, Epoch: e.epoch,
		Reminder: node.Reminder{Type: e.key.typ, Shard: e.shard, Entity: e.key.entity, Name: fmt.Sprintf("r%d", id), Payload: payload}}
	op.Done = func(_ []node.Reminder, err error) {
		if err == nil {
			r.s.rem.acked[id] = true
		}
		done(nil, err)
	}
	r.s.input(r.n, r.inc, op)
}

// noteTerm notes the coordinator term of an allocation's epoch: a coordinator whose term is
// not above every other coordinator's before is the restart gate's known limit
// (docs/recovery.md; runtimeSchedule's restartAll): a cluster formed on stale replicas after
// a full restart, whose epochs every fence refuses.
func (s *Sim) noteTerm(n *Node, typ string, epoch coordinator.Epoch) {
	term := uint64(epoch) >> 32
	by := fmt.Sprintf("%s/%d", n.ID, n.Incarnation)
	last := s.rem.lastTerm[typ]
	if last.by != by && term <= last.term && last.term != 0 && !s.TermRegressed {
		s.TermRegressed = true
		s.logf("%s: %s term %d not above %d of %s before: the restart gate's known limit", n.ID, typ, term, last.term, last.by)
	}
	if term >= last.term {
		s.rem.lastTerm[typ] = termBy{term, by}
	}
}

type termBy struct {
	term uint64
	by   string
}

// observeReminder checks a member's reminder event.
func (s *Sim) observeReminder(n *Node, ev node.Event) {
	switch ev := ev.(type) {
	case node.RemindersClaimed:
		// A claim below a newer one is no harm by itself: a member paused while its scan was
		// answered takes the answer when it wakes, before it learns the shard moved (its
		// writes are fenced off by the newer claim's, and it fires nothing without its lease).
		// What must not happen — it fires or handles a reminder — is checked below.
		k := shardKey{ev.Type, ev.Shard}
		if c := s.rem.claims[k]; ev.Epoch < c.epoch {
			s.logf("%s: stale claim of the reminders of %s/%s with epoch %s (%s claimed them with %s)", n.ID, ev.Type, ev.Shard, ev.Epoch, c.by, c.epoch)
			return
		}
		s.rem.claims[k] = claim{epoch: ev.Epoch, by: string(n.ID)}
	case node.ReminderFired:
		s.rem.fired++
		s.checkReminderEpoch(n, shardKey{ev.Reminder.Type, ev.Reminder.Shard}, coordinator.Epoch(ev.Reminder.Epoch), "fired")
	}
}

// checkReminderEpoch: a member fires or handles a shard's reminder only with the newest
// epoch any other member claimed the shard's reminders with. (An incarnation keeps the epoch
// it started with while its member is given the shard again with a newer one.)
func (s *Sim) checkReminderEpoch(n *Node, k shardKey, epoch coordinator.Epoch, what string) {
	if c := s.rem.claims[k]; c.epoch > epoch && c.by != string(n.ID) && !s.TermRegressed {
		s.fail("%s %s a reminder of %s/%s with epoch %s after %s claimed them with %s: a fenced-off home", n.ID, what, k.typ, k.id, epoch, c.by, c.epoch)
	}
}

// reminderSaveBegun and reminderSaved count the saves of a reminder's increment.
func (s *Sim) reminderSaveBegun(e *simEntity, id msgID) {
	s.checkReminderEpoch(e.r.n, shardKey{e.key.typ, e.shard}, e.epoch, "handled")
	rid := id &^ remindBit
	s.rem.begun[rid]++
	if s.rem.firedBy[rid] == nil {
		s.rem.firedBy[rid] = map[string]bool{}
	}
	s.rem.firedBy[rid][string(e.r.n.ID)] = true
}

// RemindersPending returns the acknowledged registrations (by the id of the message that
// asked for each) whose increment no save has acknowledged yet.
func (s *Sim) RemindersPending() []uint64 {
	var out []uint64
	for id := range s.rem.acked {
		if s.rem.saved[id] == 0 {
			out = append(out, uint64(id))
		}
	}
	slices.Sort(out)
	return out
}

// CheckReminders checks that every acknowledged registration fired and its increment was
// saved.
func (s *Sim) CheckReminders() error {
	if p := s.RemindersPending(); len(p) > 0 {
		var why []string
		for _, id := range p[:min(len(p), 5)] {
			m := msgID(id)
			why = append(why, fmt.Sprintf("r%d of %s (after %v; saves begun %d)", id, s.rem.entity[m], s.rem.register[m], s.rem.begun[m]))
		}
		return fmt.Errorf("%d acknowledged reminders never fired to a saved increment: %v", len(p), why)
	}
	return nil
}

// ReminderReport summarises the reminders of a run.
func (s *Sim) ReminderReport() (registered, acked, fired, duplicates int) {
	for _, id := range slices.Sorted(maps.Keys(s.rem.acked)) {
		if s.rem.saved[id] > 1 {
			duplicates += s.rem.saved[id] - 1
		}
	}
	return len(s.rem.register), len(s.rem.acked), s.rem.fired, duplicates
}

// reminderSums are the reminders' increments of counter k: saves acknowledged and begun.
func (s *Sim) reminderSums(k entityKey) (saved, begun int) {
	for id, e := range s.rem.entity {
		if e == k {
			saved += s.rem.saved[id]
			begun += s.rem.begun[id]
		}
	}
	return saved, begun
}

// checkRemindersRemoved: every reminder has fired and its record is removed within d from
// now (after the faults, the reminders are due within seconds of their registration), as
// the stores read together see it: no record of a reminder that fired may stay, nor come
// back.
func (s *Sim) checkRemindersRemoved(d time.Duration) error {
	prefix := datadir.Prefix(datadir.FamilyReminder)
	if s.RunUntil(func() bool { return len(s.storedRecords(prefix, false)) == 0 }, d) {
		return nil
	}
	var why []string
	for _, rec := range s.storedRecords(prefix, false) {
		var on []string
		for _, n := range s.nodes[1:] {
			if !n.Alive {
				continue
			}
			for _, r := range n.store.disk.Records() {
				if r.Key == rec.Key {
					on = append(on, fmt.Sprintf("%s(%s del=%v)", n.ID, r.Version, r.Deleted))
				}
			}
		}
		why = append(why, fmt.Sprintf("%q on %v", rec.Key, on))
		if len(why) == 5 {
			break
		}
	}
	return fmt.Errorf("%d reminder records still stored after the faults stopped: %v (pending %v)", len(s.storedRecords(prefix, false)), why, s.RemindersPending())
}
