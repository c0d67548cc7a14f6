package sim

import (
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"

	"github.com/shardmesh/shardmesh/coordinator"
	"github.com/shardmesh/shardmesh/datadir"
	"github.com/shardmesh/shardmesh/engine"
	"github.com/shardmesh/shardmesh/node"
	"github.com/shardmesh/shardmesh/remember"
)

// Durable counters (Options.Durable): every message to an entity increments its counter, as
// the built-in counter does (cmd/sharddaemon/builtin.go): an incarnation loads its state with
// a read fenced by its shard's epoch before its first message, and saves the new value,
// fenced by the same epoch, before it answers. The store's invariants are checked on them:
//
//   - no acknowledged write is lost: a fenced load returns at least every value the store
//     acknowledged before (across crashes, restarts, partitions and moves);
//   - a stale incarnation's write never reaches a quorum once a newer one read with a
//     fence: a save acknowledged with an epoch below a completed fenced load's must be one
//     that load read (its value no more than the value loaded);
//   - at most one live instance (checkSingleInstance, as for every entity);
//   - a counter ends between its acknowledged increments and its acknowledged plus unknown
//     ones (CheckCounters, once the run has settled).
type durable struct {
	s     *Sim
	books map[entityKey]*counterBook
}

// counterBook is what the simulation knows of one counter.
type counterBook struct {
	stored   int64          // the highest value a save of it was acknowledged with by the store
	fences   []fence        // completed fenced loads
	saving   map[msgID]bool // increments whose save began
	answered map[msgID]bool // increments whose asker got the new value
}

func newDurable(s *Sim) *durable { return &durable{s: s, books: map[entityKey]*counterBook{}} }

func (d *durable) book(k entityKey) *counterBook {
	b := d.books[k]
	if b == nil {
		b = &counterBook{saving: map[msgID]bool{}, answered: map[msgID]bool{}}
		d.books[k] = b
	}
	return b
}

// answered records what an asker heard.
func (d *durable) answered(a *simAsk, r node.Reply) {
	if _, registers := d.s.rem.register[a.msg]; !d.s.opts.Durable || r.Err != nil || registers {
		return
	}
	d.book(a.key).answered[a.msg] = true
}

// fence is a completed fenced load: the epoch it raised the floor to, and the value it read.
type fence struct {
	epoch coordinator.Epoch
	value int64
}

// counterState is a durable counter's incarnation: its value once loaded, and the message
// it is handling (whose save is under way).
type counterState struct {
	loaded  bool
	value   int64
	current *node.Message
}

// stateKey is the store key of an entity's state, as node's LoadState and SaveState use it.
func (s *Sim) stateKey(k entityKey) string {
	return node.StateKey(k.typ, s.extract(k.entity), k.entity)
}

// handle increments the counter for m: load it first (fenced by the epoch), then save the
// new value (fenced) and answer; next goes on with the mailbox.
func (c *counterState) handle(e *simEntity, m *node.Message, next func()) {
	r := e.r
	c.current = m
	done := func(reply any, err error) {
		c.current = nil
		if err == nil {
			r.s.traffic.handled(m, e.t)
		}
		r.n.Core.Answer(e.t, m, reply, err)
		next()
	}
	if id := idOf(m, e.t); id&remindBit != 0 && m.Firing() == nil {
		// A reminder's message is handled only on the home that fired it, as its firing.
		r.s.fail("%s handles the increment of reminder r%d of %s without its firing: the message left the home that fired it",
			r.n.ID, id&^remindBit, e.key)
	}
	if after, ok := r.s.rem.register[idOf(m, e.t)]; ok {
		c.remind(e, idOf(m, e.t), after, done)
		return
	}
	if !c.loaded {
		c.load(e, func(err error) {
			if err != nil {
				done(nil, fmt.Errorf("load the state of %s: %w", e.key, err))
				return
			}
			c.save(e, m, done)
		})
		return
	}
	c.save(e, m, done)
}

// load reads the counter with a read fenced by the incarnation's epoch (once more when it
// missed its quorum, as node's stateRound does).
func (c *counterState) load(e *simEntity, done func(error)) {
	d := e.r.s.durable
	var attempt func(again bool)
	attempt = func(again bool) {
		e.r.n.store.call(func(m *remember.Machine) remember.CallID {
			return m.Get(e.r.s.now, e.r.s.stateKey(e.key), uint64(e.epoch))
		}, func(a remember.Answer) {
			if errors.Is(a.Err, remember.ErrNoQuorum) && again {
				attempt(false)
				return
			}
			if a.Err != nil {
				done(a.Err)
				return
			}
			c.value, c.loaded = 0, true
			if a.Found {
				v, err := strconv.ParseInt(string(a.Record.Value), 10, 64)
				if err != nil {
					d.s.fail("%s: stored state %q is not a number", e.key, a.Record.Value)
				}
				c.value = v
			}
			b := d.book(e.key)
			if c.value < b.stored {
				d.s.fail("%s on %s (epoch %s) loaded %d, but the store acknowledged %d before: an acknowledged write was lost",
					e.key, e.r.n.ID, e.epoch, c.value, b.stored)
			}
			b.fences = append(b.fences, fence{epoch: e.epoch, value: c.value})
			done(nil)
		})
	}
	attempt(true)
}

// save stores value+1 fenced by the epoch, then answers m with it.
func (c *counterState) save(e *simEntity, m *node.Message, done func(any, error)) {
	d := e.r.s.durable
	b := d.book(e.key)
	id := idOf(m, e.t)
	next := c.value + 1
	if m.Stale() {
		// As the member's SaveState refuses the save of a firing whose home handed the
		// shard off while it was handled (node saveState).
		done(nil, fmt.Errorf("save the state of %s: %w", e.key, node.ErrNotHome))
		return
	}
	if id&remindBit != 0 {
		d.s.reminderSaveBegun(e, id)
	} else {
		b.saving[id] = true
	}
	w := remember.Write{Key: e.r.s.stateKey(e.key), Value: strconv.AppendInt(nil, next, 10), Epoch: uint64(e.epoch)}
	var attempt func(again bool)
	attempt = func(again bool) {
		e.r.n.store.call(func(m *remember.Machine) remember.CallID {
			return m.Write(e.r.s.now, []remember.Write{w})
		}, func(a remember.Answer) {
			if errors.Is(a.Err, remember.ErrNoQuorum) && again {
				attempt(false)
				return
			}
			if a.Err != nil {
				c.loaded = false // the write may have landed on some replicas: read it again next time
				done(nil, fmt.Errorf("save the state of %s: %w", e.key, a.Err))
				return
			}
			// A save of an older epoch acknowledged after a newer incarnation's fenced load
			// must be one that load saw (the replicas in both quorums stored it before the
			// fence): else the load missed an acknowledged write.
			for _, f := range b.fences {
				if e.epoch < f.epoch && next > f.value {
					d.s.fail("%s: a save of %d with epoch %s was acknowledged after a fenced load with epoch %s that read %d: a stale incarnation's write reached a quorum the fence had not",
						e.key, next, e.epoch, f.epoch, f.value)
				}
			}
			b.stored = max(b.stored, next)
			c.value = next
			if id&remindBit != 0 {
				d.s.rem.saved[id&^remindBit]++
			}
			done(next, nil)
		})
	}
	attempt(true)
}

// CheckCounters checks, once a run has settled, that every counter holds between its
// acknowledged increments and its acknowledged plus unknown ones (an increment whose save
// began but whose asker got no value may or may not have been stored).
func (s *Sim) CheckCounters() error {
	if !s.opts.Durable {
		return nil
	}
	stored := map[string]int64{}
	for _, r := range s.storedRecords(datadir.Prefix(datadir.FamilyState), true) {
		v, err := strconv.ParseInt(string(r.Value), 10, 64)
		if err != nil {
			return fmt.Errorf("stored state of %q is %q, not a number", r.Key, r.Value)
		}
		stored[r.Key] = v
	}
	for _, k := range slices.SortedFunc(maps.Keys(s.durable.books), compareEntityKeys) {
		b := s.durable.books[k]
		acked, unknown := len(b.answered), 0
		for m := range b.saving {
			if !b.answered[m] {
				unknown++
			}
		}
		v := stored[s.stateKey(k)]
		remSaved, remBegun := s.reminderSums(k)
		if int64(acked+remSaved) > v || v > int64(acked+unknown+remBegun) {
			return fmt.Errorf("counter %s holds %d: want between %d acknowledged and %d acknowledged or unknown increments (%d and %d of them reminders')",
				k, v, acked+remSaved, acked+unknown+remBegun, remSaved, remBegun)
		}
	}
	return nil
}

func compareEntityKeys(a, b entityKey) int {
	if a.typ != b.typ {
		if a.typ < b.typ {
			return -1
		}
		return 1
	}
	switch {
	case a.entity < b.entity:
		return -1
	case a.entity > b.entity:
		return 1
	}
	return 0
}

// entityType is an entity type of Options.Types as the simulation registers it: messages
// are msgIDs (8 bytes on the wire), replies the counters' values (8 bytes, or none).
func (s *Sim) entityType(tc engine.TypeConfig) node.EntityType {
	return node.EntityType{
		Name:      tc.Name,
		Settings:  tc,
		Extractor: s.extractorOf(),
		New:       func(*node.EntityContext) node.Behavior { return nil }, // the simulation's runtime handles the messages
		EncodeMessage: func(v any) ([]byte, error) {
			return binary.BigEndian.AppendUint64(nil, uint64(v.(msgID))), nil
		},
		DecodeMessage: func(b []byte) (any, error) {
			if len(b) != 8 {
				return nil, fmt.Errorf("a message of %d bytes, want 8", len(b))
			}
			return msgID(binary.BigEndian.Uint64(b)), nil
		},
		EncodeReply: func(v any) ([]byte, error) {
			if v == nil {
				return nil, nil
			}
			return binary.BigEndian.AppendUint64(nil, uint64(v.(int64))), nil
		},
		DecodeReply: func(b []byte) (any, error) {
			if len(b) == 0 {
				return nil, nil
			}
			return int64(binary.BigEndian.Uint64(b)), nil
		},
	}
}
