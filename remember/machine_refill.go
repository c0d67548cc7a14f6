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
	active   bool
	reason   string
	since    time.Time
	synced   map[NodeID]bool
	turn     int  // which unsynced peer the next round tries first
	rounds   int  // rounds that did not finish a peer, for the log
	compare  bool // a returning replica still to compare its keys with a peer's
	openKeys uint64
}

// StartRefill makes the replica refill from its peers for reason (a marker found at open,
// or asked for): its answers to reads stop counting until it is done.
func (m *Machine) StartRefill(now time.Time, reason string) {
	m.now = now
	m.rf.active, m.rf.reason, m.rf.since = true, reason, now
	m.rf.synced = map[NodeID]bool{}
	m.rf.compare = false
	m.ae.next = now // start at once
}

// Refill returns the state of the replica's refill.
func (m *Machine) Refill() RefillState {
	return RefillState{Active: m.rf.active, Reason: m.rf.reason, Since: m.rf.since, Synced: len(m.rf.synced), Need: m.refillNeed()}
}

// refillNeed is how many peers a refilling replica must hold the records of.
func (m *Machine) refillNeed() int {
	n := len(m.replicaSet(withPlus))
	return n - (n/2 + 1) + 1
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
	if answered && !peerRefilling && covered {
		m.rf.synced[peer] = true
	} else {
		m.rf.turn++ // another peer first next time
		m.rf.rounds++
	}
	peers := slices.DeleteFunc(m.replicaSet(withPlus), func(p NodeID) bool { return p == m.self })
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
