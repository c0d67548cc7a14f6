package remember

import (
	"errors"
	"fmt"
	"slices"
	"time"
)

// Refill: a replica that lost records (its damaged store moved aside and started empty, or
// found holding far fewer keys than a peer) must not count in read quorums until it holds
// again what the others do. A write acknowledged by a write quorum before the loss may be
// on no replica of a read quorum that counts the empty one: for 3 replicas with quorums of
// 2, the write on {A, B}, B emptied, a read of {B, C} finds nothing. So while it refills,
// the replica answers every read (its own and its peers') with ErrRefilling, which counts
// as a failed answer: the reader's quorum comes from the others. A fenced read still raises
// the floors here. Writes are stored and acknowledged as usual — what it stores it holds.
//
// It refills by anti-entropy rounds with its peers, one peer at a time, until a round
// covers every bucket that differs and pulls nothing: it then holds everything that peer
// holds. Once it holds what N - majority(N) + 1 of the N replicas hold, every write a
// majority acknowledged before the loss is here, and it counts again. A peer that refills
// itself does not count.
//
// The Store keeps the state across restarts in a marker file (Config.RefillMarker); the
// machine decides when a refill starts (StartRefill, or a returning member's first
// comparison with a peer) and when it ends.
//
// With replica sets the above is the metadata's refill, among the metadata replicas; a
// member also refills the metadata when it joins the metadata replicas (it holds no copy,
// or an old one). A store that lost records refills its shard units too: from StartRefill
// on, it counts in no unit's reads until the unit's host has synced the unit with it
// (machine_unitsync.go), each unit on its own; that gate lasts while the process runs.

// ErrRefilling says the replica is refilling from its peers after losing records; its answers
// to reads do not count until it is done.
var ErrRefilling = errors.New("replica refilling from its peers: its answers do not count in reads until it holds what they hold")

// Far fewer: a replica holding less than half the keys of a peer, and at least
// farFewerMin fewer, refills.
const farFewerMin = 64

// RefillState is a replica's refill as Store.Refill reports it.
type RefillState struct {
	Active bool      // the replica refills: its answers do not count in reads
	Reason string    // why it refills
	Since  time.Time // since when
	Synced int       // peers whose records it holds now
	Need   int       // peers it must hold the records of
}

// refill is the machine's refill state.
type refill struct {
	units         bool            // the shard units' gate: only those in unitOK count in reads
	unitOK        map[Unit]bool   // units synced since the gate closed
	peerRefilling map[NodeID]bool // metadata peers seen refilling themselves
	active        bool
	reason        string
	since         time.Time
	synced        map[NodeID]bool
	turn          int  // which unsynced peer the next round tries first
	rounds        int  // rounds that did not finish a peer, for the log
	compare       bool // a returning replica still to compare its keys with a peer's
	openKeys      uint64
}

// StartRefill makes the replica refill from its peers for reason (a marker found at open,
// or asked for): its answers to reads stop counting until it is done.
func (m *Machine) StartRefill(now time.Time, reason string) {
	m.startMetaRefill(now, reason)
	m.rf.units, m.rf.unitOK = true, map[Unit]bool{}
	m.rf.compare = false
}

// startMetaRefill makes the replica refill the metadata for reason.
func (m *Machine) startMetaRefill(now time.Time, reason string) {
	m.now = now
	m.rf.active, m.rf.reason, m.rf.since = true, reason, now
	m.rf.synced, m.rf.peerRefilling = map[NodeID]bool{}, map[NodeID]bool{}
	m.ae.next = now // start at once (a returning replica still compares its keys with the first peer's)
}

// enteredMeta starts a refill of the metadata when this member joins the metadata
// replicas with placement p (prev: the one before, nil at its first): new, back after a
// restart or a while away, it may lack writes a majority of the set took meanwhile, and two
// such members in a read quorum could miss one (the simulation found it: two restarted
// voters read a directive from before). Not as the only one, nor without anti-entropy,
// which refills. The oldest refills too: after a full-cluster restart it may be the one
// that missed the last writes (the simulation found that as well); its peers refill from
// one another then (refill.lost). Reads wait for it (refillWait) rather than fail.
func (m *Machine) enteredMeta(prev, p *Placement) {
	if m.meta.cfg.Gen > 0 || m.cfg.AntiEntropyInterval <= 0 || p == nil || !slices.Contains(p.Meta(), m.self) || len(p.Meta()) < 2 {
		return
	}
	if prev != nil && slices.Contains(prev.Meta(), m.self) {
		return
	}
	if !m.rf.active {
		m.startMetaRefill(m.now, reasonEnteredMeta)
	}
}

// reasonEnteredMeta is the refill of a member that joined the metadata replicas.
const reasonEnteredMeta = "it joined the metadata replicas"

// lost reports whether this replica refills because records may be missing from its disk
// (rebuilt, far fewer keys, asked for), not only because it joined the metadata replicas:
// a peer that refills then is no source for another's refill. A member that joined (or
// restarted into) the metadata set holds a whole disk, stale perhaps but only of real
// writes: its peers refill from it, so that after a full-cluster restart every metadata
// replica refills from N - majority(N) + 1 others and none counts at once on its own disk.
func (r *refill) lost() bool { return r.active && r.reason != reasonEnteredMeta }

// counts reports whether this replica's answers count in reads of u.
func (r *refill) counts(u Unit) bool {
	if u.Meta() {
		return !r.active
	}
	return !r.units || r.unitOK[u]
}

// countsKeys reports whether this replica's answer to a peer's read counts: for every
// unit the read touches (a read spanning units is an administrator's: it always does).
func (r *refill) countsKeys(l Layout, keys []string, msg interface {
	GetScan() bool
	GetPrefix() []byte
}) bool {
	if !r.active && !r.units {
		return true
	}
	if msg.GetScan() {
		u, ok := l.UnitOfPrefix(string(msg.GetPrefix()))
		return !ok || r.counts(u)
	}
	for _, k := range keys {
		if !r.counts(l.UnitOf(k)) {
			return false
		}
	}
	return true
}

// unitSynced notes that u's host synced it with this replica.
func (r *refill) unitSynced(u Unit) {
	if r.units {
		r.unitOK[u] = true
	}
}

// Refill returns the state of the replica's refill.
func (m *Machine) Refill() RefillState {
	return RefillState{Active: m.rf.active, Reason: m.rf.reason, Since: m.rf.since, Synced: len(m.rf.synced), Need: m.refillNeed()}
}

// refillNeed is how many metadata peers a refilling replica must hold the records of:
// N - majority(N) + 1 of the N metadata replicas, so that every write a majority took is
// among them; all the peers not refilling themselves when fewer are (the metadata set
// grew by several members at once: what they hold, they took as writes).
func (m *Machine) refillNeed() int {
	n := len(m.metaSources())
	need := n - majority(n) + 1
	others := 0
	for _, p := range m.metaSources() {
		if p != m.self && !m.rf.peerRefilling[p] {
			others++
		}
	}
	return max(1, min(need, others))
}

// refillPeer picks the next peer a refilling replica syncs with: the first unsynced one
// from its turn on ("" when every one is synced).
func (m *Machine) refillPeer(peers []NodeID) NodeID {
	var unsynced []NodeID
	for _, p := range peers {
		if !m.rf.synced[p] {
			unsynced = append(unsynced, p)
		}
	}
	if len(unsynced) == 0 {
		return ""
	}
	return unsynced[m.rf.turn%len(unsynced)]
}

// refillRound takes the outcome of an anti-entropy round of a refilling (or returning)
// replica with peer: whether the peer answered, refills itself, and how many keys it
// holds; whether the round covered every bucket that differed and pulled nothing.
func (m *Machine) refillRound(peer NodeID, answered, peerRefilling bool, peerKeys uint64, covered bool) {
	if m.rf.compare && answered && !peerRefilling {
		m.rf.compare = false
		local := m.rf.openKeys // anti-entropy may have refilled some since: the question is what it came back with
		if peerKeys >= farFewerMin && local*2 < peerKeys && peerKeys-local >= farFewerMin {
			m.StartRefill(m.now, fmt.Sprintf("it held %d keys when it started, far fewer than the %d of %s", local, peerKeys, peer))
			return
		}
	}
	if !m.rf.active {
		return
	}
	if answered {
		m.rf.peerRefilling[peer] = peerRefilling
	}
	if answered && !peerRefilling && covered {
		m.rf.synced[peer] = true
	} else {
		m.rf.turn++ // another peer first next time
		m.rf.rounds++
	}
	peers := slices.DeleteFunc(slices.Clone(m.metaSources()), func(p NodeID) bool { return p == m.self })
	synced := 0
	for _, p := range peers {
		if m.rf.synced[p] {
			synced++
		}
	}
	if len(peers) > 0 && synced >= m.refillNeed() {
		m.rf.active = false
		m.stats.Refilled++
	}
}
