package metaraft

import (
	"flag"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

var (
	raceSeeds   = flag.Int("metaraft.seeds", 40, "seeds of TestMetaRaftRace")
	badgerSeeds = flag.Int("metaraft.badgerseeds", 5, "seeds of TestMetaRaftRaceBadger")
)

// TestMetaRaftRace is TestMetaDriversRace (remember/metaballot_test.go) on raft: 5 members,
// one founds the group, and every member drives the voters toward its own view of the
// membership, views that differ for 40 s while the network drops 5–15 % of frames, delays
// and reorders the rest, partitions members, and members crash and restart from their
// storage. Every member writes metadata all along and reads acknowledged writes back.
// After every event: at most one leader per term; every member applies the same write and
// configuration at each index, and each configuration follows the one before; every
// acknowledged write is in the log of a majority of the set that holds the metadata
// (checked on each acknowledgement, each new configuration and each log that lost
// entries: nothing else can take an entry away); and every linearizable read finds every
// write acknowledged before it. Healed, the group ends on the last view, m1..m4, and every
// acknowledged write is read back from each of them and is in each one's applied state.
func TestMetaRaftRace(t *testing.T) {
	seeds := *raceSeeds
	if testing.Short() {
		seeds = 10
	}
	if raceEnabled {
		seeds = 3
	}
	for seed := range uint64(seeds) {
		t.Run(strconv.FormatUint(seed, 10), func(t *testing.T) {
			s := raceGroup(t, seed, raceOpts{})
			t.Logf("seed %d: %d events, %d configurations, %d terms with a leader, %d writes acknowledged, %d reads checked (%d failed to answer)",
				seed, s.events, s.nConfs, len(s.leaders), len(s.acked), s.readsOK, s.readsFailed)
		})
	}
}

// TestMetaRaftRaceBadger is TestMetaRaftRace on BadgerStorage (the members' storages under
// prefixes of their own in one in-memory Badger; a restarted member reopens its storage),
// with full disks among the faults: a member's Save fails from its next few on, the member
// stops (its calls are answered with ErrStopped and the disk's error, it sends nothing),
// and 0.5–5 s later the disk is freed and the member restarted from its storage. The
// same checks hold after every event.
func TestMetaRaftRaceBadger(t *testing.T) {
	seeds := *badgerSeeds
	if testing.Short() {
		seeds = 2
	}
	stops := 0
	for seed := range uint64(seeds) {
		t.Run(strconv.FormatUint(seed, 10), func(t *testing.T) {
			s := raceGroup(t, seed, raceOpts{badger: true, diskFull: true})
			stops += s.stops
			t.Logf("seed %d: %d events, %d configurations, %d terms with a leader, %d writes acknowledged, %d reads checked (%d failed to answer), %d members stopped on a full disk",
				seed, s.events, s.nConfs, len(s.leaders), len(s.acked), s.readsOK, s.readsFailed, s.stops)
		})
	}
	if stops == 0 {
		t.Fatal("no member stopped on a full disk")
	}
	// Without full disks, a seed runs on Badger exactly as on memory: every answer of the
	// storages is the same, so is every event.
	t.Run("as memory", func(t *testing.T) {
		mem, bad := raceGroup(t, 1, raceOpts{}), raceGroup(t, 1, raceOpts{badger: true})
		if mem.events != bad.events || len(mem.acked) != len(bad.acked) || !maps.Equal(mem.applied, bad.applied) {
			t.Fatalf("seed 1: on memory %d events, %d writes acknowledged, %d applied; on Badger %d, %d, %d",
				mem.events, len(mem.acked), len(mem.applied), bad.events, len(bad.acked), len(bad.applied))
		}
	})
}

// TestMetaRaftRaceCatchesEarlyAcks is the negative control: members that acknowledge a
// write when they propose it, before it is committed, lose acknowledged writes (a proposal
// forwarded to a leader that is gone, or dropped by the network, is never retried), and
// the linearizable reads of the checker find them missing.
func TestMetaRaftRaceCatchesEarlyAcks(t *testing.T) {
	skipUnderRaceDetector(t)
	caught := 0
	const seeds = 5
	for seed := range uint64(seeds) {
		s := raceGroup(t, seed, raceOpts{ackEarly: true})
		lost := slices.IndexFunc(s.failures, func(f string) bool { return strings.Contains(f, "found false") })
		if lost >= 0 {
			caught++
			t.Logf("seed %d: %d failures, e.g. %s", seed, len(s.failures), s.failures[lost])
		}
	}
	if caught < seeds {
		t.Fatalf("the checks caught early acknowledgements in %d of %d seeds", caught, seeds)
	}
}

// raceOpts varies the race: acknowledgements at proposal and forgetful voters (the
// negative controls), Badger storages, full disks.
type raceOpts struct {
	ackEarly, forgetful, badger, diskFull bool
}

func raceGroup(t *testing.T, seed uint64, opts raceOpts) *sim {
	s := newSim(t, seed, Config{SnapshotEvery: 100, Timeout: 3 * time.Second})
	s.ackEarly, s.forgetful, s.stopsOK = opts.ackEarly, opts.forgetful, opts.diskFull
	s.collect = opts.ackEarly || opts.forgetful
	wipes := 6 // 1 in 6 crashes loses the storage
	if s.forgetful {
		wipes = 2
	}
	if opts.badger {
		s.db = memDB(t)
	}
	all := names(5)
	for i, name := range all {
		s.add(name, i == 0)
		s.nodes[i].view = all
	}
	for i := range s.nodes {
		s.every(100*time.Millisecond, 300*time.Millisecond, func() { s.write(i) })
		s.every(time.Second, 3*time.Second, func() { s.drive(i) })
		s.every(200*time.Millisecond, 600*time.Millisecond, func() {
			if len(s.acked) > 0 {
				s.read(i, s.acked[s.rng.IntN(len(s.acked))])
			}
		})
	}
	s.run(10 * time.Second)
	if c := s.nodes[0].m.configuration(0); c.Joint() || !slices.Equal(voterNames(c.Voters), all) {
		s.fail("after 10 s the group is %+v, want %v", c, all)
	}

	// 40 s of trouble.
	s.drop = 0.05 + 0.1*s.rng.Float64()
	var faults func()
	var cutUntil time.Time
	var side []bool
	healed := false
	faults = func() {
		if healed {
			return
		}
		switch r := s.rng.IntN(10); {
		case r < 3: // a partition for 1–8 s
			side = make([]bool, len(s.nodes))
			for i := range side {
				side[i] = s.rng.IntN(2) == 0
			}
			cutUntil = s.now.Add(time.Second + time.Duration(s.rng.Int64N(int64(7*time.Second))))
		case r < 6: // a crash, restarted 0.5–5 s later (at most 2 down at once); 1 in 6 loses its storage
			i := s.rng.IntN(len(s.nodes))
			wipe := s.rng.IntN(wipes) == 0 && (s.forgetful || s.mayWipe(i))
			downs := 0
			for _, n := range s.nodes {
				if n.m == nil || n.st.failAt > 0 {
					downs++
				}
			}
			if s.nodes[i].m == nil || s.nodes[i].st.failAt > 0 || downs >= 2 {
				break
			}
			if opts.diskFull && r == 5 { // the disk fills up: Save fails from the next 1–20 on
				st := s.nodes[i].st
				st.failAt = st.saves + 1 + s.rng.IntN(20)
				s.at(500*time.Millisecond+time.Duration(s.rng.Int64N(int64(4500*time.Millisecond))), func() { s.freeDisk(i) })
				break
			}
			if wipe {
				s.wipe(i)
			} else {
				s.down(i)
			}
			s.at(500*time.Millisecond+time.Duration(s.rng.Int64N(int64(4500*time.Millisecond))), func() { s.up(i) })
		default: // a member's view of the voters changes: 3–5 of them
			i := s.rng.IntN(len(s.nodes))
			view := slices.Clone(all)
			s.rng.Shuffle(len(view), func(a, b int) { view[a], view[b] = view[b], view[a] })
			view = view[:3+s.rng.IntN(3)]
			slices.Sort(view)
			s.nodes[i].view = view
		}
		s.at(500*time.Millisecond+time.Duration(s.rng.Int64N(int64(2500*time.Millisecond))), faults)
	}
	s.cut = func(a, b int) bool { return s.now.Before(cutUntil) && side[a] != side[b] }
	s.at(0, faults)
	s.run(40 * time.Second)

	// Healed: everyone up, one view (m0 gone), no loss.
	healed, s.drop, s.cut = true, 0, nil
	final := all[1:]
	for i, n := range s.nodes {
		s.freeDisk(i)
		if n.m == nil {
			s.up(i)
		}
		n.view = final
	}
	s.run(30 * time.Second)
	s.stopped = true // the writes in flight settle
	s.run(2 * time.Second)
	for _, n := range s.nodes[1:] {
		if c := n.m.configuration(0); c.Joint() || !slices.Equal(c.Voters, s.voters(final)) {
			s.fail("healed, %s is at configuration %+v, want %v", n.name, c, final)
		}
	}
	// Every acknowledged write, from each final voter's applied state and read back.
	s.spread = time.Millisecond
	for _, n := range s.nodes[1:] {
		for _, w := range s.acked {
			if v, ok := n.kv.value(w.key); !ok || string(v) != w.value {
				s.fail("healed, %s holds %q = %q (%v), but %q was acknowledged", n.name, w.key, v, ok, w.value)
				break
			}
		}
	}
	for _, w := range s.acked {
		w.final = true
		s.read(1+s.rng.IntN(4), w)
	}
	s.run(5 * time.Second)
	for _, w := range s.reads {
		if w.final {
			s.fail("healed, the final read of %q is not answered after 5 s", w.key)
			break
		}
	}
	if len(s.acked) < 100 && !s.collect {
		s.fail("only %d writes acknowledged", len(s.acked))
	}
	return s
}

// TestMetaRaftRaceCatchesForgetfulVoters is the negative control of replica ids: a member
// whose storage was lost comes back under the id it had (as it would if ids were its
// name's), votes as if it had never acknowledged anything, and the group loses or rewrites
// committed entries — the checker's reads and applied-entry comparison find it.
func TestMetaRaftRaceCatchesForgetfulVoters(t *testing.T) {
	skipUnderRaceDetector(t)
	caught := 0
	const seeds = 10
	for seed := range uint64(seeds) {
		s := raceGroup(t, seed, raceOpts{forgetful: true})
		lost := slices.IndexFunc(s.failures, func(f string) bool {
			return strings.Contains(f, "found false") || strings.Contains(f, "another member") || strings.Contains(f, "stopped:")
		})
		if lost >= 0 {
			caught++
			t.Logf("seed %d: %d wipes, %d failures, e.g. %s", seed, s.wipes, len(s.failures), s.failures[lost])
		}
	}
	if caught == 0 {
		t.Fatalf("no seed of %d caught a forgetful voter", seeds)
	}
}

// skipUnderRaceDetector skips a test that checks a pure machine's logic over many seeds
// (see racedetector_on_test.go).
func skipUnderRaceDetector(t *testing.T) {
	t.Helper()
	if raceEnabled {
		t.Skip("a seed loop of a pure machine: scripts/test runs it without the race detector")
	}
}
