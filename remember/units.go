package remember

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"time"
)

// Replica sets. The records of each shard — its remembered entities and its entities'
// durable state — are a unit (Layout) kept on a replica set of ReplicationFactor members
// (Placement.Target: the shard's host first, then rendezvous hashing over its type's role,
// spread over zones); the cluster metadata is a unit of its own on the oldest members
// (Placement.Meta). A quorum is a majority of the set, so a write costs the same at 3
// members as at 1,000, each member stores about ReplicationFactor/N of the shards, and one
// stopped member is a minority of every set it is in.
//
// Where a unit's records are is its replica configuration (UnitConfig), kept in the
// metadata under Layout.ConfigKey. Only the member hosting the shard changes it: it is told
// so (Host) with its allocation epoch, reads the configuration with a read fenced by that
// epoch — so a former host can change nothing any more — and writes it with that epoch.
// Any other member reads it before each operation on the unit.
//
// A host moves the records when the set it would choose now differs from the configured
// one (members joined, left or were downed; the shard moved to it): it stores the joint
// configuration (the old set and the new one), from which every operation needs a majority
// of both sets; waits for the rounds started before to end; copies every record, tombstone
// and fence floor from a majority of the old set to a majority of the new one, page by page;
// stores the new set alone; and has the former replicas drop their copies. A host that
// crashes halfway leaves the joint configuration stored, and the next host finishes the
// move. Moves are rate-limited (MaxMoves at a time per host) and counted in Stats.

// DefaultMaxMoves is sharding.store.max-simultaneous-moves: the moves of replica sets one
// member runs at once.
const DefaultMaxMoves = 4

// ErrNoReplicas says no member may hold a unit (no member of its type's role).
var ErrNoReplicas = errors.New("no member may hold the records")

// unitTable holds the state of the shard units this member hosts, or has calls waiting on.
type unitTable map[Unit]*unitState

// unitState is what this member knows and does about one shard unit.
type unitState struct {
	hosted    bool
	caretaker bool        // not hosted anywhere, its home gone: this member repairs its set (care.go)
	epoch     uint64      // the allocation epoch it hosts the shard with (a caretaker: the configuration's)
	cfg       *UnitConfig // known: a host keeps it; others only while their calls wait
	resolving bool        // the configuration is being read
	waiting   []unitWait
	writes    int    // write rounds in flight that write it
	writeGen  uint64 // write rounds started that wrote it
	move      *unitMove
	queued    bool      // waits for a move slot
	retryAt   time.Time // when a failed move tries again
	lastErr   error     // of the last move that failed
}

// unitWait is a call waiting for its unit's configuration.
type unitWait struct {
	write bool
	done  func(quorum, error)
}

// get returns u's state, created if missing.
func (t unitTable) get(u Unit) *unitState {
	us := t[u]
	if us == nil {
		us = &unitState{}
		t[u] = us
	}
	return us
}

// release forgets u when nothing needs its state any more.
func (t unitTable) release(u Unit) {
	if us := t[u]; us != nil && !us.hosted && !us.caretaker && !us.resolving && len(us.waiting) == 0 && us.writes == 0 && us.move == nil {
		delete(t, u)
	}
}

// wake returns when a failed move next tries again (zero: none waits).
func (t unitTable) wake() time.Time {
	var next time.Time
	for _, us := range t {
		if !us.retryAt.IsZero() && (next.IsZero() || us.retryAt.Before(next)) {
			next = us.retryAt
		}
	}
	return next
}

// hostedUnits returns the units this member hosts, sorted.
func (m *Machine) hostedUnits() []Unit {
	var out []Unit
	for u, us := range m.units {
		if us.hosted {
			out = append(out, u)
		}
	}
	slices.SortFunc(out, compareUnits)
	return out
}

func compareUnits(a, b Unit) int {
	if c := cmp.Compare(a.Type, b.Type); c != 0 {
		return c
	}
	return cmp.Compare(a.Shard, b.Shard)
}

// SetPlacement gives the machine the members as they are now (build it with NewPlacement
// from the membership): rounds started from now on use it, and hosts move the records of
// their shards whose replica sets it changes.
func (m *Machine) SetPlacement(now time.Time, p *Placement) {
	m.now = now
	if p == nil {
		return // keeps the last one (a member that stops knowing its cluster writes nothing new)
	}
	prev := m.place
	m.place = p
	m.startMeta()
	for _, u := range m.hostedUnits() {
		m.considerMove(u)
	}
	m.careAfterDepartures(prev, p)
}

// Placement returns the placement the machine works with (nil before SetPlacement).
func (m *Machine) Placement() *Placement { return m.place }

// Host tells the machine that this member hosts the shard of unit u from now on, with
// allocation epoch epoch: it reads the unit's configuration fenced by the epoch (so no
// former host changes it any more), keeps it, and moves the records where they should be.
func (m *Machine) Host(now time.Time, u Unit, epoch uint64) {
	m.now = now
	if u.Meta() {
		return
	}
	us := m.units.get(u)
	if us.hosted && us.epoch == epoch {
		return
	}
	m.abandonMove(us)
	us.hosted, us.caretaker, us.epoch, us.cfg, us.retryAt = true, false, epoch, nil, time.Time{}
	if !us.resolving {
		m.resolve(u, us)
	}
}

// Unhost tells the machine that this member no longer hosts u's shard.
func (m *Machine) Unhost(now time.Time, u Unit) {
	m.now = now
	us := m.units[u]
	if us == nil || !us.hosted {
		return
	}
	if us.move != nil && m.cfg.AntiEntropyInterval > 0 {
		// A move cut short leaves its joint configuration: if no member hosts the shard
		// next, this replica finishes it as the set's caretaker (care.go).
		m.queueCare(u, m.now.Add(careRetry))
	}
	m.abandonMove(us)
	us.hosted, us.cfg, us.retryAt = false, nil, time.Time{}
	m.units.release(u)
}

// prepare finds the quorum of each of units (resolving shard units' configurations) and
// calls done with them, or with the first error. write says the call writes: a unit never
// written gets its first configuration stored before.
func (m *Machine) prepare(units []Unit, write bool, done func([]quorum, error)) {
	qs := make([]quorum, len(units))
	left := len(units)
	var failed bool
	for i, u := range units {
		m.unitQuorum(u, write, func(q quorum, err error) {
			if failed {
				return
			}
			if err == nil {
				err = checkQuorum(q)
			}
			if err != nil {
				failed = true
				done(nil, err)
				return
			}
			qs[i] = q
			if left--; left == 0 {
				done(qs, nil)
			}
		})
	}
}

// checkQuorum refuses a quorum with an empty set.
func checkQuorum(q quorum) error {
	for _, s := range q.sets {
		if len(s) == 0 {
			return fmt.Errorf("remember: replica set of %s: %w", q.unit, ErrNoReplicas)
		}
	}
	return nil
}

// unitQuorum calls fn with the quorum of u: the metadata set, or u's configuration once
// known.
func (m *Machine) unitQuorum(u Unit, write bool, fn func(quorum, error)) {
	if u.Meta() {
		fn(quorum{}, errMetaRound) // metadata calls go to the metadata group (metagroup.go)
		return
	}
	us := m.units.get(u)
	if us.cfg != nil && !us.resolving {
		fn(us.cfg.quorum(u), nil)
		return
	}
	us.waiting = append(us.waiting, unitWait{write: write, done: fn})
	if !us.resolving {
		m.resolve(u, us)
	}
}

// resolve reads u's configuration: fenced by the hosting epoch on its host.
func (m *Machine) resolve(u Unit, us *unitState) {
	us.resolving = true
	var fence uint64
	if us.hosted {
		fence = us.epoch
	}
	m.ownGet(m.layout.ConfigKey(u), fence, func(a Answer) { m.resolved(u, fence, a) })
}

// resolved takes the answer of u's configuration read with fence.
func (m *Machine) resolved(u Unit, fence uint64, a Answer) {
	us := m.units[u]
	if us == nil {
		return
	}
	us.resolving = false
	if us.hosted && us.epoch != fence {
		m.resolve(u, us) // it started hosting (again) meanwhile: read with its epoch
		return
	}
	if a.Err != nil {
		m.failWaiting(u, us, fmt.Errorf("remember: replica set of %s: %w", u, a.Err))
		return
	}
	if a.Found {
		cfg, err := DecodeUnitConfig(a.Record.Value)
		if err != nil {
			m.failWaiting(u, us, fmt.Errorf("remember: replica set of %s: %w", u, err))
			return
		}
		m.configured(u, us, &cfg)
		m.stampConfig(u, us, cfg, a.Record.Version)
		return
	}
	// Never written: the set it should have. (A cluster from before replica sets held
	// every record on every member, so any set finds them.)
	home := NodeID("")
	if us.hosted {
		home = m.self
	}
	cfg := &UnitConfig{Set: m.target(u, home), Gen: 1}
	write := us.hosted
	for _, w := range us.waiting {
		write = write || w.write
	}
	if !write || len(cfg.Set) == 0 {
		m.configured(u, us, cfg)
		return
	}
	// Stored before anything is written under it, so that the next host finds the records.
	us.resolving = true
	m.writeConfig(u, *cfg, fence, func(err error) {
		us.resolving = false
		if m.units[u] != us {
			return
		}
		if us.hosted && us.epoch != fence {
			m.resolve(u, us)
			return
		}
		if err != nil {
			m.failWaiting(u, us, fmt.Errorf("remember: store the replica set of %s: %w", u, err))
			return
		}
		m.configured(u, us, cfg)
	})
}

// stampConfig has a host that found u's configuration written by another member, or with
// an older epoch, write it again as it is, with its own epoch, unless a move of its own
// (which writes it) is under way or queued: the configuration then names its host as its
// writer, which caretakers leave it to (care.go), and holds the epoch of the key's fence,
// which a caretaker writes with once the host is gone. Without it, a host that fenced the
// configuration and was killed before it moved the set left a configuration whose epoch
// was below the fence: every caretaker's write was refused, and a member the set named
// could never leave (e2e TestAdmin/leave). It costs one metadata write per allocation;
// nothing waits for it.
func (m *Machine) stampConfig(u Unit, us *unitState, cfg UnitConfig, v Version) {
	if !us.hosted || us.move != nil || us.queued || (v.Epoch >= us.epoch && NodeID(v.Writer) == m.self) {
		return
	}
	m.writeConfig(u, cfg, us.epoch, func(error) {}) // refused: a newer host fenced it, and moves it
}

// target returns the set u should have with home first, this member alone without a
// placement.
func (m *Machine) target(u Unit, home NodeID) []NodeID {
	if m.place == nil {
		return []NodeID{m.self}
	}
	return m.place.Target(u, home)
}

// configured takes u's configuration: the calls waiting go on with it, a host keeps it (and
// moves the records if they should be elsewhere), others forget it.
func (m *Machine) configured(u Unit, us *unitState, cfg *UnitConfig) {
	us.cfg = cfg
	waiting := us.waiting
	us.waiting = nil
	for _, w := range waiting {
		w.done(cfg.quorum(u), nil)
	}
	if us.hosted {
		m.considerMove(u)
		return
	}
	us.cfg = nil
	m.units.release(u)
}

// failWaiting fails the calls waiting for u's configuration.
func (m *Machine) failWaiting(u Unit, us *unitState, err error) {
	waiting := us.waiting
	us.waiting = nil
	for _, w := range waiting {
		w.done(quorum{}, err)
	}
	m.units.release(u)
}

// writeConfig stores u's configuration with epoch; done gets the outcome.
func (m *Machine) writeConfig(u Unit, cfg UnitConfig, epoch uint64, done func(error)) {
	m.ownWrite([]Write{{Key: m.layout.ConfigKey(u), Value: cfg.encode(), Epoch: epoch}}, func(a Answer) { done(a.Err) })
}

// UnitStatus is a shard unit this member hosts, as Store.Units reports it.
type UnitStatus struct {
	Unit   Unit
	Epoch  uint64
	Config UnitConfig // zero while it is read
	Known  bool       // Config is known
	// Moving: the records move to Config.Next; Phase says where the move is, Copied how
	// many records it copied.
	Moving bool
	Phase  string
	Copied int
	Queued bool   // waits for a move slot
	Err    string // the last failed step of a move
	// Held is what this replica holds of the unit.
	Held, Tombstones int
	// Since is when the move running now started.
	Since time.Time
}

// Units reports the shard units this member hosts, sorted.
func (m *Machine) Units() []UnitStatus {
	var out []UnitStatus
	for _, u := range m.hostedUnits() {
		us := m.units[u]
		st := UnitStatus{Unit: u, Epoch: us.epoch, Queued: us.queued}
		if us.cfg != nil {
			st.Config, st.Known = *us.cfg, true
			st.Moving = us.cfg.moving()
		}
		if mv := us.move; mv != nil {
			st.Phase, st.Copied, st.Since = mv.phase.String(), mv.copied, mv.started
		}
		if us.lastErr != nil {
			st.Err = us.lastErr.Error()
		}
		d := m.hold.unit(u)
		st.Held, st.Tombstones = d.count, d.tombstones
		out = append(out, st)
	}
	return out
}

// Holding is what a replica holds of one unit.
type Holding struct {
	Unit       Unit
	Keys       int
	Tombstones int
}

// Holdings reports what this replica holds: every shard unit it has keys of, sorted, and
// how many metadata keys.
func (m *Machine) Holdings() (units []Holding, metaKeys int) {
	for u, d := range m.hold.units {
		units = append(units, Holding{Unit: u, Keys: d.count, Tombstones: d.tombstones})
	}
	slices.SortFunc(units, func(a, b Holding) int { return compareUnits(a.Unit, b.Unit) })
	return units, int(m.hold.meta.entries())
}
