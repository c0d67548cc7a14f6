package chaos

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"slices"
	"sort"

	"golang.org/x/sys/unix"
)

// record is one line of a counter's journal (cmd/sharddaemon JournalRecord).
type record struct {
	Event  string `json:"ev"`
	Type   string `json:"type"`
	Entity string `json:"id"`
	Node   string `json:"node"`
	PID    int    `json:"pid"`
	Epoch  uint64 `json:"epoch"`
	Mono   int64  `json:"mono"`
	Wall   int64  `json:"wall"`
	Value  int64  `json:"v"`
	Began  int64  `json:"began"` // an ack's save began (0 in journals without it: Mono)
	// Reminder: the durable reminder whose firing made an ack's change (inc-after).
	Reminder string `json:"reminder"`
}

// began is when an ack's change may have taken effect at the earliest.
func (r record) began() int64 {
	if r.Began != 0 {
		return r.Began
	}
	return r.Mono
}

// monoNow reads CLOCK_MONOTONIC, the clock of the journals: one clock for every process on
// the host, never stepped (Go's own monotonic reading counts from process start).
func monoNow() int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		panic(fmt.Sprintf("clock_gettime(CLOCK_MONOTONIC): %v", err))
	}
	return ts.Nano()
}

// readJournal reads a journal file; a torn last line (a kill -9 mid-write) is skipped and
// counted.
func readJournal(path string) ([]record, int, error) {
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		return nil, 0, nil
	}
	if err != nil {
		return nil, 0, err
	}
	defer f.Close()
	var out []record
	torn := 0
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		var r record
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			torn++
			continue
		}
		out = append(out, r)
	}
	return out, torn, sc.Err()
}

// incarnation is one run of an entity on one process, from its start record to its stop
// record or, without one, its process's exit.
type incarnation struct {
	node       string
	pid        int
	epoch      uint64
	start, end int64 // CLOCK_MONOTONIC ns; end MaxInt64 when the process's exit is unknown
	stopped    bool  // ended by its stop record
	halted     bool  // ended when its member stopped serving (a halt record)
	stale      bool  // started while an incarnation of a higher epoch ran on another member
	acks       []record
}

func (i incarnation) String() string {
	end := "process exit"
	switch {
	case i.stopped:
		end = "stop"
	case i.halted:
		end = "member halted"
	}
	return fmt.Sprintf("node %s pid %d epoch %d [%d, %d] (%s, %d acks)", shortNode(i.node), i.pid, i.epoch, i.start, i.end, end, len(i.acks))
}

func shortNode(n string) string {
	if len(n) > 8 {
		return "…" + n[len(n)-8:]
	}
	return n
}

// journalCheck is what the journals show.
type journalCheck struct {
	Incarnations int
	Acks         int
	// PausedOverlaps are incarnations of one entity on two members at once where the older
	// one's process was paused (SIGSTOP) between its last acknowledged change and the newer
	// one's start, and began no acknowledged change after that start (a save paused mid-way
	// may be acknowledged after it: it took effect before): it woke up fenced, not a
	// violation, but counted, with the longest such overlap (ns).
	PausedOverlaps   int
	MaxPausedOverlap int64
	// LapsedOverlaps are incarnations of one entity on two members at once that never
	// served at the same time: whenever both existed, one of their processes had lost its
	// majority lease (a "lapse" record, cut off in a minority or paused) and handled
	// nothing. Not violations, counted, with the longest (ns).
	LapsedOverlaps   int
	MaxLapsedOverlap int64
	Violations       []string
	// Stale are overlaps where the newer incarnation started with an older epoch than the
	// running one (a stale allocation obeyed): violations, kept apart to name their bug.
	Stale     []string
	Anomalies []string
	// MaxAck is the greatest acknowledged value per entity.
	MaxAck map[string]int64
}

// checkJournals builds incarnations from the records, ending those without a stop record
// when their member stopped serving (its halt record) or at their process's exit (exits:
// pid → CLOCK_MONOTONIC ns), whichever came first, and checks that no entity ran on two
// members at once and that acknowledged values rise with time.
func checkJournals(recs []record, exits map[int]int64, pauses []pause) journalCheck {
	res := journalCheck{MaxAck: map[string]int64{}}
	byEntity := map[string][]record{}
	halts := map[int]int64{} // pid → when its member stopped serving
	leases := servingOf(recs)
	for _, r := range recs {
		if r.Event == "lapse" || r.Event == "serve" {
			continue
		}
		if r.Event == "halt" {
			if t, ok := halts[r.PID]; !ok || r.Mono < t {
				halts[r.PID] = r.Mono
			}
			continue
		}
		byEntity[r.Entity] = append(byEntity[r.Entity], r)
	}
	entities := make([]string, 0, len(byEntity))
	for e := range byEntity {
		entities = append(entities, e)
	}
	sort.Strings(entities)
	for _, e := range entities {
		rs := byEntity[e]
		sort.SliceStable(rs, func(a, b int) bool { return rs[a].Mono < rs[b].Mono })
		var incs []*incarnation
		open := map[int]*incarnation{} // pid → open incarnation
		var acks []record
		for _, r := range rs {
			switch r.Event {
			case "start":
				if o := open[r.PID]; o != nil {
					res.Anomalies = append(res.Anomalies, fmt.Sprintf("%s: started again on pid %d while %v had not stopped", e, r.PID, o))
					o.end = r.Mono
				}
				inc := &incarnation{node: r.Node, pid: r.PID, epoch: r.Epoch, start: r.Mono, end: math.MaxInt64}
				incs = append(incs, inc)
				open[r.PID] = inc
			case "ack":
				acks = append(acks, r)
				if o := open[r.PID]; o != nil {
					o.acks = append(o.acks, r)
				} else {
					res.Anomalies = append(res.Anomalies, fmt.Sprintf("%s: ack of %d on pid %d outside an incarnation", e, r.Value, r.PID))
				}
			case "unsure": // a reminder's firing that may have landed: reminderFirings counts it
			case "stop":
				if o := open[r.PID]; o != nil {
					o.end, o.stopped = r.Mono, true
					delete(open, r.PID)
				} else {
					res.Anomalies = append(res.Anomalies, fmt.Sprintf("%s: stop on pid %d outside an incarnation", e, r.PID))
				}
			default:
				res.Anomalies = append(res.Anomalies, fmt.Sprintf("%s: unknown journal event %q", e, r.Event))
			}
		}
		for _, o := range open {
			if t, ok := exits[o.pid]; ok {
				o.end = t
			}
			if t, ok := halts[o.pid]; ok && t < o.end {
				o.end, o.halted = t, true
			}
		}
		res.Incarnations += len(incs)
		res.Acks += len(acks)
		// Acknowledged values rise with time across every incarnation, in the order the
		// saves began (a save paused mid-way is acknowledged late but took effect early).
		sort.SliceStable(acks, func(a, b int) bool { return acks[a].began() < acks[b].began() })
		for i, a := range acks {
			res.MaxAck[e] = max(res.MaxAck[e], a.Value)
			if i > 0 && a.Value <= acks[i-1].Value {
				res.Violations = append(res.Violations, fmt.Sprintf("%s: acknowledged %d (node %s, epoch %d) after %d (node %s, epoch %d): an acknowledged increment was lost or applied twice",
					e, a.Value, shortNode(a.Node), a.Epoch, acks[i-1].Value, shortNode(acks[i-1].Node), acks[i-1].Epoch))
			}
		}
		// An incarnation that started while one of a higher epoch ran on another member
		// started from a stale allocation.
		for _, x := range incs {
			for _, y := range incs {
				if y.node != x.node && y.epoch > x.epoch && y.start <= x.start && x.start < y.end {
					x.stale = true
				}
			}
		}
		// No two incarnations on different members at once.
		for i, x := range incs {
			for _, y := range incs[i+1:] {
				older, newer := x, y
				if newer.start < older.start {
					older, newer = newer, older
				}
				if older.node == newer.node || newer.start >= older.end {
					continue
				}
				overlap := min(older.end, newer.end) - newer.start
				if pausedBetween(pauses, older.pid, lastAck(older), newer.start) && acksAfter(older, newer.start) == 0 {
					res.PausedOverlaps++
					res.MaxPausedOverlap = max(res.MaxPausedOverlap, overlap)
					continue
				}
				if leases.together(older.pid, newer.pid, newer.start, min(older.end, newer.end)) == 0 && acksAfter(older, newer.start) == 0 {
					res.LapsedOverlaps++
					res.MaxLapsedOverlap = max(res.MaxLapsedOverlap, overlap)
					continue
				}
				activity := "the older began no change after the newer started"
				if n := acksAfter(older, newer.start); n > 0 {
					activity = fmt.Sprintf("the older began %d acknowledged changes after the newer started", n)
				}
				v := fmt.Sprintf("%s ran on two members at once for %.3fs (%s): %v and %v",
					e, float64(min(older.end, newer.end)-newer.start)/1e9, activity, older, newer)
				if older.stale || newer.stale {
					// One of them started from an allocation older than one running then.
					res.Stale = append(res.Stale, v+" — one started with an older epoch than one running")
					continue
				}
				res.Violations = append(res.Violations, v)
			}
		}
	}
	return res
}

// serving holds, per process, when it gained and lost its majority lease ("serve" and
// "lapse" records, sorted by time).
type serving map[int][]record

func servingOf(recs []record) serving {
	s := serving{}
	for _, r := range recs {
		if r.Event == "lapse" || r.Event == "serve" {
			s[r.PID] = append(s[r.PID], r)
		}
	}
	for _, rs := range s {
		sort.SliceStable(rs, func(a, b int) bool { return rs[a].Mono < rs[b].Mono })
	}
	return s
}

// at reports whether pid served at t: as its last record before t says; before its first
// record, unless that is a "serve" (a journal without such records: always).
func (s serving) at(pid int, t int64) bool {
	rs := s[pid]
	i := sort.Search(len(rs), func(i int) bool { return rs[i].Mono > t })
	if i == 0 {
		return len(rs) == 0 || rs[0].Event != "serve"
	}
	return rs[i-1].Event == "serve"
}

// together is how long, in [from, to), processes a and b both served (ns).
func (s serving) together(a, b int, from, to int64) int64 {
	cuts := []int64{from, to}
	for _, pid := range []int{a, b} {
		for _, r := range s[pid] {
			if r.Mono > from && r.Mono < to {
				cuts = append(cuts, r.Mono)
			}
		}
	}
	slices.Sort(cuts)
	var both int64
	for i := 0; i+1 < len(cuts); i++ {
		if cuts[i+1] > cuts[i] && s.at(a, cuts[i]) && s.at(b, cuts[i]) {
			both += cuts[i+1] - cuts[i]
		}
	}
	return both
}

// pausedBetween reports whether process pid was paused at some time in [from, to].
func pausedBetween(pauses []pause, pid int, from, to int64) bool {
	return slices.ContainsFunc(pauses, func(p pause) bool { return p.pid == pid && p.from <= to && from <= p.till })
}

// lastAck is when the incarnation's last acknowledged change began, or its start.
func lastAck(inc *incarnation) int64 {
	t := inc.start
	for _, a := range inc.acks {
		t = max(t, a.began())
	}
	return t
}

// acksAfter counts the incarnation's acknowledged changes that began after t.
func acksAfter(inc *incarnation, t int64) int {
	n := 0
	for _, a := range inc.acks {
		if a.began() > t {
			n++
		}
	}
	return n
}
