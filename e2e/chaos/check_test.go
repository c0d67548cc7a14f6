package chaos

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const (
	nodeA = "12D3KooWnodeAAAAAAAA"
	nodeB = "12D3KooWnodeBBBBBBBB"
)

func rec(ev, node string, pid int, epoch uint64, mono, v int64) record {
	return record{Event: ev, Type: "counter", Entity: "c1", Node: node, PID: pid, Epoch: epoch, Mono: mono, Value: v}
}

func TestCheckJournalsHandoff(t *testing.T) {
	// A stops, then B starts: one history, values rising.
	recs := []record{
		rec("start", nodeA, 10, 1, 100, 0), rec("ack", nodeA, 10, 1, 110, 1), rec("ack", nodeA, 10, 1, 120, 2), rec("stop", nodeA, 10, 1, 130, 2),
		rec("start", nodeB, 20, 2, 140, 0), rec("ack", nodeB, 20, 2, 150, 3),
	}
	jc := checkJournals(recs, map[int]int64{20: 200}, nil)
	if len(jc.Violations) > 0 || len(jc.Anomalies) > 0 {
		t.Fatalf("a clean handoff: %+v", jc)
	}
	if jc.Incarnations != 2 || jc.Acks != 3 || jc.MaxAck["c1"] != 3 {
		t.Fatalf("counts: %+v", jc)
	}
}

func TestCheckJournalsOverlapIsAViolation(t *testing.T) {
	// A never stops and its process lives on while B starts: two members at once.
	recs := []record{
		rec("start", nodeA, 10, 1, 100, 0), rec("ack", nodeA, 10, 1, 110, 1),
		rec("start", nodeB, 20, 2, 140, 0), rec("ack", nodeB, 20, 2, 150, 2),
	}
	jc := checkJournals(recs, map[int]int64{10: 160, 20: 200}, nil)
	if len(jc.Violations) != 1 || !strings.Contains(jc.Violations[0], "two members at once") {
		t.Fatalf("want one overlap violation, got %q", jc.Violations)
	}
	// Ended by its process's exit before B starts: no overlap (a kill -9).
	jc = checkJournals(recs, map[int]int64{10: 130, 20: 200}, nil)
	if len(jc.Violations) != 0 {
		t.Fatalf("A's process exited before B started: %q", jc.Violations)
	}
	// An unknown exit counts as running to the end.
	jc = checkJournals(recs, map[int]int64{}, nil)
	if len(jc.Violations) != 1 || !strings.Contains(jc.Violations[0], "began no change after") {
		t.Fatalf("unknown exit: %q", jc.Violations)
	}
	// A's member stopped serving (halt) before B started, its process exited later: no
	// overlap. A halt after B's start does not help.
	halted := append(slices.Clone(recs), record{Event: "halt", Node: nodeA, PID: 10, Mono: 135})
	if jc = checkJournals(halted, map[int]int64{10: 160, 20: 200}, nil); len(jc.Violations) != 0 {
		t.Fatalf("A halted before B started: %q", jc.Violations)
	}
	halted[len(halted)-1].Mono = 145
	if jc = checkJournals(halted, map[int]int64{10: 160, 20: 200}, nil); len(jc.Violations) != 1 {
		t.Fatalf("A halted after B started: %q", jc.Violations)
	}
}

func TestCheckJournalsPausedOverlap(t *testing.T) {
	recs := []record{
		rec("start", nodeA, 10, 1, 100, 0), rec("ack", nodeA, 10, 1, 110, 1),
		rec("start", nodeB, 20, 2, 140, 0), rec("ack", nodeB, 20, 2, 150, 2),
	}
	exits := map[int]int64{10: 170, 20: 200}
	// A was paused from 120 to 145 (after its last ack, before B started) and acknowledged
	// nothing after: fenced, counted, not a violation.
	jc := checkJournals(recs, exits, []pause{{pid: 10, from: 120, till: 145}})
	if len(jc.Violations) != 0 || jc.PausedOverlaps != 1 || jc.MaxPausedOverlap != 30 {
		t.Fatalf("paused overlap: %+v", jc)
	}
	// A paused, but it acknowledges after B started: a violation, and the values go back.
	late := append(recs, rec("ack", nodeA, 10, 1, 160, 2))
	jc = checkJournals(late, exits, []pause{{pid: 10, from: 120, till: 145}})
	if len(jc.Violations) != 2 || !strings.Contains(jc.Violations[1], "began 1 acknowledged changes after") {
		t.Fatalf("want an overlap and a repeated value, got %q", jc.Violations)
	}
	// A paused in the middle of a save that began at 115 and acknowledges it when it wakes
	// at 160: the change took effect before B started (B goes on from it), so it is fenced.
	midSave := []record{
		rec("start", nodeA, 10, 1, 100, 0), rec("ack", nodeA, 10, 1, 110, 1),
		rec("start", nodeB, 20, 2, 140, 0), rec("ack", nodeB, 20, 2, 150, 3),
		rec("ack", nodeA, 10, 1, 160, 2),
	}
	midSave[4].Began = 115
	jc = checkJournals(midSave, exits, []pause{{pid: 10, from: 120, till: 155}})
	if len(jc.Violations) != 0 || jc.PausedOverlaps != 1 {
		t.Fatalf("a save paused mid-way: %+v", jc)
	}
	// Another process's pause does not excuse A.
	jc = checkJournals(recs, exits, []pause{{pid: 11, from: 120, till: 145}})
	if len(jc.Violations) != 1 {
		t.Fatalf("pause of another process: %q", jc.Violations)
	}
}

// lease is a process's serve or lapse record (no entity).
func lease(ev string, pid int, mono int64) record { return record{Event: ev, PID: pid, Mono: mono} }

func TestCheckJournalsLapsedOverlap(t *testing.T) {
	recs := []record{
		lease("serve", 10, 90), rec("start", nodeA, 10, 1, 100, 0), rec("ack", nodeA, 10, 1, 110, 1),
		lease("serve", 20, 95), rec("start", nodeB, 20, 2, 140, 0), rec("ack", nodeB, 20, 2, 150, 2),
	}
	exits := map[int]int64{10: 170, 20: 200}
	// A's lease lapsed at 130, before B started, and came back only after A's exit: A
	// served nothing while B ran.
	lapsed := append(slices.Clone(recs), lease("lapse", 10, 130))
	jc := checkJournals(lapsed, exits, nil)
	if len(jc.Violations) != 0 || jc.LapsedOverlaps != 1 || jc.MaxLapsedOverlap != 30 {
		t.Fatalf("lapsed overlap: %+v", jc)
	}
	// Without the lapse, or with A serving again at 160 (while B runs), a violation.
	if jc = checkJournals(recs, exits, nil); len(jc.Violations) != 1 {
		t.Fatalf("no lapse: %q", jc.Violations)
	}
	again := append(slices.Clone(lapsed), lease("serve", 10, 160))
	if jc = checkJournals(again, exits, nil); len(jc.Violations) != 1 || jc.LapsedOverlaps != 0 {
		t.Fatalf("A served again while B ran: %+v", jc)
	}
	// B not serving from its start until A's exit: no time both served.
	bLate := []record{
		lease("serve", 10, 90), rec("start", nodeA, 10, 1, 100, 0), rec("ack", nodeA, 10, 1, 110, 1),
		lease("serve", 20, 95), lease("lapse", 20, 135), rec("start", nodeB, 20, 2, 140, 0), lease("serve", 20, 175), rec("ack", nodeB, 20, 2, 180, 2),
	}
	if jc = checkJournals(bLate, exits, nil); len(jc.Violations) != 0 || jc.LapsedOverlaps != 1 {
		t.Fatalf("B not serving while A ran: %+v", jc)
	}
}

func TestCheckJournalsLostAck(t *testing.T) {
	// B's first ack repeats a value A acknowledged: an acknowledged increment was lost.
	recs := []record{
		rec("start", nodeA, 10, 1, 100, 0), rec("ack", nodeA, 10, 1, 110, 1), rec("ack", nodeA, 10, 1, 120, 2), rec("stop", nodeA, 10, 1, 130, 2),
		rec("start", nodeB, 20, 2, 140, 0), rec("ack", nodeB, 20, 2, 150, 2),
	}
	jc := checkJournals(recs, nil, nil)
	if len(jc.Violations) != 1 || !strings.Contains(jc.Violations[0], "lost or applied twice") {
		t.Fatalf("want a lost-ack violation, got %q", jc.Violations)
	}
}

func TestCheckJournalsAnomalies(t *testing.T) {
	recs := []record{rec("ack", nodeA, 10, 1, 110, 1), rec("stop", nodeA, 10, 1, 120, 1), rec("bogus", nodeA, 10, 1, 130, 1)}
	jc := checkJournals(recs, nil, nil)
	if len(jc.Anomalies) != 3 {
		t.Fatalf("want 3 anomalies, got %q", jc.Anomalies)
	}
}

func TestReadJournalSkipsTornLine(t *testing.T) {
	path := filepath.Join(t.TempDir(), "j")
	body := `{"ev":"start","id":"c1","node":"n","pid":1,"epoch":1,"mono":5}` + "\n" + `{"ev":"ack","id":"c1","no`
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	rs, torn, err := readJournal(path)
	if err != nil || len(rs) != 1 || torn != 1 || rs[0].Mono != 5 {
		t.Fatalf("got %v, %d torn, %v", rs, torn, err)
	}
	if rs, torn, err := readJournal(filepath.Join(t.TempDir(), "none")); err != nil || rs != nil || torn != 0 {
		t.Fatalf("missing journal: %v %d %v", rs, torn, err)
	}
}

func TestCheckCounters(t *testing.T) {
	ld := newLoad(nil, 3, 0, 0, 0)
	ld.counters[0] = counterState{attempted: 5, acked: 3, values: map[int64]string{1: "m1", 2: "m1", 4: "m2"}}
	ld.counters[1] = counterState{attempted: 2, acked: 2, values: map[int64]string{1: "m1", 2: "m1"}}
	ld.counters[2] = counterState{attempted: 2, acked: 1, values: map[int64]string{1: "m1"}, dupes: []string{"value 1 answered via m1 and via m2"}}
	rep := &Report{}
	checkCounters(rep, ld, map[string]int64{"c0": 4, "c1": 3, "c2": 1}, nil)
	if len(rep.Violations) != 2 || !strings.Contains(rep.Violations[0], "c1: final 3 > 2 attempted") || !strings.Contains(rep.Violations[1], "c2: value 1 answered") {
		t.Fatalf("violations: %q", rep.Violations)
	}
	if rep.Acked != 6 || rep.Attempted != 9 || rep.FinalSum != 8 {
		t.Fatalf("sums: %+v", rep)
	}
	rep = &Report{}
	checkCounters(rep, ld, map[string]int64{"c0": 3}, nil)
	if len(rep.Violations) != 2 || !strings.Contains(rep.Violations[0], "acknowledged value 4") {
		t.Fatalf("lost increment: %q", rep.Violations)
	}
}

// An answered inc-after is an increment that must be in the final value; a reminder that
// fired twice (the journals say so) may add one more than was attempted.
func TestCheckCountersWithReminders(t *testing.T) {
	ld := newLoad(nil, 2, 0, 0, 0)
	ld.counters[0] = counterState{attempted: 3, acked: 1, reminders: 2, values: map[int64]string{1: "m1"}}
	ld.counters[1] = counterState{attempted: 2, acked: 1, reminders: 1, values: map[int64]string{1: "m1"}}
	recs := []record{
		{Event: "ack", Entity: "c1", Reminder: "inc-after-1"}, {Event: "ack", Entity: "c1", Reminder: "inc-after-1"},
		{Event: "ack", Entity: "c1", Reminder: "inc-after-2"}, {Event: "ack", Entity: "c1"},
	}
	rep := &Report{}
	checkCounters(rep, ld, map[string]int64{"c0": 2, "c1": 3}, reminderFirings(rep, recs))
	if len(rep.Violations) != 1 || !strings.Contains(rep.Violations[0], "c0: final 2 < 3 acknowledged") {
		t.Fatalf("violations: %q (want c0's answered reminder missing, c1's second firing allowed)", rep.Violations)
	}
	if rep.ReminderFirings != 3 || rep.ReminderDuplicates != 1 || rep.Reminders != 3 {
		t.Fatalf("figures: %+v", rep)
	}
}

func TestCheckJournalsStaleStart(t *testing.T) {
	// B starts with an older epoch than A's running incarnation: a stale allocation.
	recs := []record{
		rec("start", nodeA, 10, 22, 100, 0), rec("ack", nodeA, 10, 22, 110, 1),
		rec("start", nodeB, 20, 10, 140, 0),
	}
	jc := checkJournals(recs, map[int]int64{10: 200, 20: 200}, nil)
	if len(jc.Violations) != 0 || len(jc.Stale) != 1 || !strings.Contains(jc.Stale[0], "older epoch") {
		t.Fatalf("stale start: %+v", jc)
	}
	// A's incarnation then stops; C starts the shard properly with a newer epoch while B's
	// stale incarnation lives on: that overlap is the stale start's too.
	recs[2].Mono = 105
	recs = append(recs, rec("stop", nodeA, 10, 22, 150, 1), record{Event: "start", Type: "counter", Entity: "c1", Node: "12D3KooWnodeCCCCCCCC", PID: 30, Epoch: 30, Mono: 160})
	jc = checkJournals(recs, map[int]int64{20: 200, 30: 200}, nil)
	if len(jc.Violations) != 0 || len(jc.Stale) != 2 {
		t.Fatalf("a stale incarnation outliving the right one: %+v", jc)
	}
}

// A reminder's firing whose save failed ("unsure": it may have landed) and that fired again
// counts as an extra attempt, as one that fired twice does.
func TestReminderFiringsCountUnsureOnes(t *testing.T) {
	rec := func(ev, id, rem string) record {
		var r record
		r.Event, r.Entity, r.Reminder = ev, id, rem
		return r
	}
	var rep Report
	extra := reminderFirings(&rep, []record{
		rec("unsure", "c1", "r1"), rec("ack", "c1", "r1"),
		rec("ack", "c2", "r2"),
		rec("ack", "c3", "r3"), rec("ack", "c3", "r3"),
		rec("unsure", "c4", "r4"), // fired once, not again yet: no extra
		rec("ack", "c5", ""),
	})
	if extra["c1"] != 1 || extra["c2"] != 0 || extra["c3"] != 1 || extra["c4"] != 0 || len(extra) != 2 {
		t.Fatalf("extra = %v", extra)
	}
	if rep.ReminderFirings != 4 || rep.ReminderDuplicates != 2 {
		t.Fatalf("firings %d, duplicates %d", rep.ReminderFirings, rep.ReminderDuplicates)
	}
}
