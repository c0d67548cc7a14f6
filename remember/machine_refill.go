package remember

import (
	"errors"
	"slices"
	"strings"
	"time"
)

// Refill: a replica that lost records (its damaged store moved aside and started empty, or
// asked to) must not count in the reads of a shard unit until it holds again what the
// unit's other replicas hold. A write acknowledged by a write quorum before the loss may be
// on no replica of a read quorum that counts the empty one: for 3 replicas with quorums of
// 2, the write on {A, B}, B emptied, a read of {B, C} finds nothing. So while it refills,
// the replica answers every read of a unit it has not been synced for with ErrRefilling,
// which counts as a failed answer: the reader's quorum comes from the others. A fenced read
// still raises the floors here. Writes are stored and acknowledged as usual — what it
// stores it holds.
//
// Each unit's host syncs the unit with its replicas (machine_unitsync.go); a refilling
// replica tells it so, and the host copies it what it lacks, then tells it it is synced.
// The refill ends once every unit whose configuration names this member has been synced:
// the machine reads the units' configurations from the metadata group (a linearizable
// scan) at the start and every refillScanEvery, and ends when a scan finds none left. The
// Store keeps the state across restarts in a marker file (Config.RefillMarker), removed
// when the refill ends, so a restart while it refills refills again.
//
// The metadata needs no refill: it is the metadata group's (metagroup.go), and a voter
// whose storage was lost comes back as a new replica that Raft brings up to date before it
// counts.

// ErrRefilling says the replica is refilling from its peers after losing records; its answers
// to reads do not count until it is done.
var ErrRefilling = errors.New("replica refilling from its peers: its answers do not count in reads until it holds what they hold")

// refillScanEvery is how often a refilling replica reads which units name it.
const refillScanEvery = time.Second

// RefillState is a replica's refill as Store.Refill reports it.
type RefillState struct {
	Active bool      // the replica refills: its answers do not count in reads of units not synced yet
	Reason string    // why it refills
	Since  time.Time // since when
	Synced int       // units synced since it started
	Need   int       // units that name it and are not synced yet, at the last count
}

// refill is the machine's refill state.
type refill struct {
	syncing  map[Unit]bool // units this replica syncs itself (refillSync)
	active   bool
	reason   string
	since    time.Time
	unitOK   map[string]bool // the configuration keys of the units synced since it started
	need     int
	scanAt   time.Time // the next read of the units' configurations
	scanning bool
}

// StartRefill makes the replica refill from its peers for reason (a marker found at open,
// or asked for): its answers to reads of units stop counting until each is synced.
func (m *Machine) StartRefill(now time.Time, reason string) {
	m.now = now
	m.rf = refill{active: true, reason: reason, since: now, unitOK: map[string]bool{}, need: -1, scanAt: now, syncing: map[Unit]bool{}}
}

// counts reports whether this replica's answers count in reads of u.
func (m *Machine) counts(u Unit) bool {
	return !m.rf.active || u.Meta() || m.rf.unitOK[m.layout.ConfigKey(u)]
}

// countsKeys reports whether this replica's answer to a peer's read counts: for every
// unit the read touches (a read spanning units is an administrator's: it always does).
func (m *Machine) countsKeys(keys []string, msg interface {
	GetScan() bool
	GetPrefix() []byte
}) bool {
	if !m.rf.active {
		return true
	}
	if msg.GetScan() {
		u, ok := m.layout.UnitOfPrefix(string(msg.GetPrefix()))
		return !ok || m.counts(u)
	}
	for _, k := range keys {
		if !m.counts(m.layout.UnitOf(k)) {
			return false
		}
	}
	return true
}

// refillSync has this refilling replica sync unit u itself, as its host would
// (machine_unitsync.go): a unit nobody hosts (its shard idle since its host went) has no
// host to do it, and the refill would wait for the shard's next message.
func (m *Machine) refillSync(u Unit, set []NodeID) {
	if m.rf.syncing[u] || m.us.syncing >= maxUnitSyncs {
		return
	}
	m.rf.syncing[u] = true
	m.us.syncing++
	m.stats.UnitSyncs++
	m.syncPage(&unitSyncRun{u: u, refill: true, set: slices.Clone(set), unread: map[NodeID]bool{}, unpushed: map[NodeID]bool{}})
}

// unitSynced notes that u's host synced it with this replica.
func (m *Machine) unitSynced(u Unit) {
	if m.rf.active {
		m.rf.unitOK[m.layout.ConfigKey(u)] = true
	}
}

// Refill returns the state of the replica's refill.
func (m *Machine) Refill() RefillState {
	return RefillState{Active: m.rf.active, Reason: m.rf.reason, Since: m.rf.since, Synced: len(m.rf.unitOK), Need: max(m.rf.need, 0)}
}

// tickRefill reads, when due, which units name this member and ends the refill when every
// one of them was synced.
func (m *Machine) tickRefill() {
	rf := &m.rf
	if !rf.active || rf.scanning || m.now.Before(rf.scanAt) || m.place == nil {
		return
	}
	rf.scanning = true
	m.ownScan(configPrefix(m.layout), func(a Answer) {
		rf.scanning = false
		rf.scanAt = m.now.Add(refillScanEvery)
		if a.Err != nil || !rf.active {
			return
		}
		need := 0
		for _, r := range a.Records {
			if r.Key == m.layout.ConfigKey(Unit{}) {
				continue // the metadata's own, from before the group
			}
			cfg, err := DecodeUnitConfig(r.Value)
			if err == nil && cfg.Votes(m.self) && !rf.unitOK[r.Key] {
				need++
				if u, ok := unitOfConfigKey(m.layout, r.Key); ok && !cfg.moving() {
					m.refillSync(u, cfg.Set)
				}
			}
		}
		rf.need = need
		if need == 0 {
			rf.active = false
			m.stats.Refilled++
		}
	})
}

// refillWake returns when tickRefill has something to do (zero: nothing).
func (m *Machine) refillWake() time.Time {
	if !m.rf.active || m.rf.scanning || m.place == nil {
		return time.Time{}
	}
	return m.rf.scanAt
}

// configPrefix returns the prefix of every unit configuration's key: what the keys of two
// units of different types share.
func configPrefix(l Layout) string {
	a, b := l.ConfigKey(Unit{Type: "a"}), l.ConfigKey(Unit{Type: "b"})
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return a[:n]
}

// unitOfConfigKey returns the unit whose configuration is kept under key, as l names it
// (the type and the shard, in the order and with the separator ConfigKey puts them).
func unitOfConfigKey(l Layout, key string) (Unit, bool) {
	p := configPrefix(l)
	ab := l.ConfigKey(Unit{Type: "a", Shard: "b"})
	if !strings.HasPrefix(ab, p+"a") || !strings.HasSuffix(ab, "b") || len(ab) < len(p)+2 {
		return Unit{}, false
	}
	sep := ab[len(p)+1 : len(ab)-1]
	rest, ok := strings.CutPrefix(key, p)
	if !ok || sep == "" {
		return Unit{}, false
	}
	typ, shard, ok := strings.Cut(rest, sep)
	u := Unit{Type: typ, Shard: shard}
	return u, ok && typ != "" && l.ConfigKey(u) == key
}
