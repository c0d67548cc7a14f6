package tui

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/charmbracelet/x/ansi"

	"github.com/shardmesh/shardmesh/admin/adminpb"
)

// maxInflight bounds the handoffs followed at once: a stream that lost the end of many
// handoffs must not grow the dashboard without end.
const maxInflight = 10000

// slowAfter is how long a handoff runs before the Handoffs view marks it SLOW: the default
// handoff-timeout is a minute, and a healthy handoff takes milliseconds.
const slowAfter = 10 * time.Second

// handoffKey names a shard of a type.
type handoffKey struct{ typ, shard string }

// handoff is a handoff under way, as the watch stream tells it.
type handoff struct {
	key       handoffKey
	from      string
	cause     string
	phase     string // begun, stopping, stopped
	epoch     uint64
	began     time.Time
	stoppedIn time.Duration // handoff-completed's took: stopped at the old home
	seq       uint64        // the order handoffs began in, for evicting the oldest
}

// started is an entry of the order handoffs began in.
type started struct {
	key handoffKey
	seq uint64
}

// doneHandoff is a handoff that finished: re-allocated, or failed.
type doneHandoff struct {
	key          handoffKey
	from, to     string
	cause, phase string
	stoppedIn    time.Duration
	total        time.Duration // begun to re-allocated
	at           time.Time
	failed       bool
}

// handoffTracker follows handoffs through the watch stream: begun, buffering, stopping
// entities, stopped, re-allocated; or failed. It keeps the last n finished.
type handoffTracker struct {
	inflight                  map[handoffKey]*handoff
	order                     []started // handoffs in the order they began; ended ones are skipped
	seq                       uint64
	done                      []doneHandoff // ring of the last cap(done)
	next                      int
	started, finished, failed uint64
	rounds                    uint64
	lastRound                 time.Time
}

func newHandoffTracker(n int) handoffTracker {
	return handoffTracker{inflight: map[handoffKey]*handoff{}, done: make([]doneHandoff, 0, n)}
}

// apply takes one event.
func (t *handoffTracker) apply(ev *adminpb.WatchEvent) {
	k := handoffKey{ev.EntityType, ev.Shard}
	at := time.UnixMilli(ev.AtUnixMs)
	switch ev.Kind {
	case "handoff-started":
		if len(t.inflight) >= maxInflight {
			t.evictOldest()
		}
		t.started++
		t.seq++
		t.inflight[k] = &handoff{key: k, from: ev.From, cause: ev.Cause, phase: "begun", epoch: ev.Epoch, began: at, seq: t.seq}
		t.order = append(t.order, started{k, t.seq})
		if len(t.order) > 2*maxInflight {
			t.compact()
		}
	case "handoff-phase":
		if h := t.inflight[k]; h != nil {
			h.phase = ev.Phase
		}
	case "handoff-completed":
		if h := t.inflight[k]; h != nil {
			h.phase, h.stoppedIn = "stopped", time.Duration(ev.TookMs)*time.Millisecond
		}
	case "handoff-failed":
		d := doneHandoff{key: k, at: at, failed: true, phase: ev.Phase}
		if h := t.inflight[k]; h != nil {
			d.from, d.cause, d.total = h.from, h.cause, at.Sub(h.began)
			delete(t.inflight, k)
		}
		t.failed++
		t.push(d)
	case "shard-allocated":
		h := t.inflight[k]
		if h == nil {
			return
		}
		delete(t.inflight, k)
		t.finished++
		t.push(doneHandoff{key: k, from: h.from, to: ev.To, cause: h.cause, phase: h.phase, stoppedIn: h.stoppedIn, total: at.Sub(h.began), at: at})
	case "rebalance-round":
		t.rounds++
		t.lastRound = at
	}
}

func (t *handoffTracker) push(d doneHandoff) {
	if len(t.done) < cap(t.done) {
		t.done = append(t.done, d)
		return
	}
	t.done[t.next] = d
	t.next = (t.next + 1) % len(t.done)
}

// recent returns the finished handoffs, newest first.
func (t *handoffTracker) recent() []doneHandoff {
	out := make([]doneHandoff, 0, len(t.done))
	for i := range t.done {
		out = append(out, t.done[(t.next+len(t.done)-1-i)%len(t.done)])
	}
	return out
}

// forgetInflight drops the handoffs in flight (after a gap in the event stream).
func (t *handoffTracker) forgetInflight() {
	clear(t.inflight)
	t.order = t.order[:0]
}

// evictOldest drops the handoff in flight that began first.
func (t *handoffTracker) evictOldest() {
	for len(t.order) > 0 {
		s := t.order[0]
		t.order = t.order[1:]
		if h := t.inflight[s.key]; h != nil && h.seq == s.seq {
			delete(t.inflight, s.key)
			return
		}
	}
}

// compact drops the ended handoffs from order.
func (t *handoffTracker) compact() {
	kept := make([]started, 0, len(t.inflight))
	for _, s := range t.order {
		if h := t.inflight[s.key]; h != nil && h.seq == s.seq {
			kept = append(kept, s)
		}
	}
	t.order = kept
}

// flight is a handoff in flight as the Handoffs view shows it: the watch stream's, with
// the handoffs call's details when its last answer has them (or the details alone, for a
// handoff the stream has not told of).
type flight struct {
	key         handoffKey
	from, cause string
	phase       string
	began       time.Time
	detail      *handoffDetail
}

// flights returns the handoffs in flight, the oldest first.
func (m Model) flights() []flight {
	t, d := &m.handoffs, &m.details
	out := make([]flight, 0, len(t.inflight)+len(d.byKey))
	for k, h := range t.inflight {
		f := flight{key: k, from: h.from, cause: h.cause, phase: h.phase, began: h.began}
		if x := d.byKey[k]; x != nil {
			// The answer is more exact: the coordinator's phase, and elapsed time by
			// the dashboard's clock rather than the origin member's.
			f.phase, f.began, f.detail = x.phase, x.began, x
		}
		out = append(out, f)
	}
	for k, x := range d.byKey {
		if t.inflight[k] == nil {
			out = append(out, flight{key: k, from: x.from, cause: x.cause, phase: x.phase, began: x.began, detail: x})
		}
	}
	slices.SortFunc(out, func(a, b flight) int {
		if c := a.began.Compare(b.began); c != 0 {
			return c
		}
		return strings.Compare(a.key.typ+"/"+a.key.shard, b.key.typ+"/"+b.key.shard)
	})
	return out
}

// inflightCount is how many handoffs are in flight: the stream's and the answer's.
func (m Model) inflightCount() int {
	n := len(m.handoffs.inflight)
	for k := range m.details.byKey {
		if m.handoffs.inflight[k] == nil {
			n++
		}
	}
	return n
}

// phaseLabel names a handoff's phase: begun (regions told to buffer), buffering (every
// region acknowledged), stopping entities (at the old home), stopped (awaiting
// re-allocation).
func phaseLabel(f flight) string {
	switch f.phase {
	case "begun":
		if f.detail != nil && f.detail.nWaiting == 0 {
			return "buffering"
		}
		return "begun"
	case "stopping", "stopping-entities":
		return "stopping entities"
	}
	return f.phase
}

// heldUpBy names what a handoff waits for, as its details tell: the regions that have not
// started buffering, or the entities that have not stopped; "" if nothing (or unknown).
// It names as many as fit in width cells (one at least), and counts the rest.
func heldUpBy(x *handoffDetail, now time.Time, width int) string {
	var names []string
	var n int
	var before, after string
	switch {
	case x == nil:
		return ""
	case x.nWaiting > 0:
		names, n = make([]string, len(x.waiting)), x.nWaiting
		for i, r := range x.waiting {
			names[i] = shortID(r)
		}
		before, after = "held up by: regions ", " (not buffering yet)"
	case x.nStragglers > 0:
		when := "forced stop due now"
		if left := x.forceStopAt.Sub(now); left > 0 {
			when = "forced stop in " + fmtDuration(left.Round(time.Second))
		}
		names, n = x.stragglers, x.nStragglers
		before, after = "held up by: entities ", " ("+when+")"
	default:
		return ""
	}
	s := ""
	for k := len(names); k >= 1; k-- {
		s = before + someNames(names[:k], n) + after
		if ansi.StringWidth(s) <= width {
			break
		}
	}
	return s
}

// someNames joins names, of n in all, saying how many more there are.
func someNames(names []string, n int) string {
	s := strings.Join(names, ", ")
	if n > len(names) {
		s += fmt.Sprintf(" and %d more", n-len(names))
	}
	return s
}

// detailsNote says how fresh the handoffs call's details are.
func (m Model) detailsNote() string {
	d := &m.details
	st := m.styles
	switch {
	case d.err != nil:
		return st.bad.Render("details: " + d.err.Error())
	case d.at.IsZero():
		return ""
	case len(d.failed) > 0:
		ids := make([]string, len(d.failed))
		for i, f := range d.failed {
			ids[i] = shortID(f.Node)
		}
		return st.warn.Render(fmt.Sprintf("details %s, incomplete: %s did not answer", d.at.In(m.cfg.Location).Format("15:04:05"), strings.Join(ids, ", ")))
	}
	return st.dim.Render("details " + d.at.In(m.cfg.Location).Format("15:04:05"))
}

// flightLines renders a handoff in flight: its row, and a line saying what holds it up
// or that it is slow.
func (m Model) flightLines(f flight) []string {
	st := m.styles
	elapsed := m.now.Sub(f.began)
	buffered := "-"
	if f.detail != nil {
		buffered = fmt.Sprint(f.detail.buffered)
	}
	row := fmt.Sprintf("  %s %s %s %s %8s %s", pad(clip(f.key.typ+"/"+f.key.shard, 15), 15), pad(shortID(f.from), 9),
		pad(fmtDuration(elapsed), 7), pad(phaseLabel(f), 17), buffered, f.cause)
	const indent = "      "
	var notes []string
	slow := elapsed > slowAfter
	if slow {
		notes = append(notes, "SLOW")
	}
	if h := heldUpBy(f.detail, m.now, m.width-len(indent)-len("SLOW · ")); h != "" {
		notes = append(notes, h)
	}
	out := []string{row}
	if len(notes) > 0 {
		out = append(out, indent+strings.Join(notes, " · "))
	}
	if slow {
		for i := range out {
			out[i] = st.warn.Render(out[i])
		}
	}
	return out
}

// handoffsView renders the Handoffs view.
func (m Model) handoffsView(height int) []string {
	t := &m.handoffs
	st := m.styles
	reb := "unknown (" + m.rebalance.reason + ")"
	if m.rebalance.known {
		reb = "active"
		if m.rebalance.paused {
			reb = st.warn.Render("PAUSED")
		}
	}
	var buffered uint64
	for _, ms := range m.cluster.perMember {
		buffered += ms.buffered
	}
	lines := []string{
		fmt.Sprintf("rebalance %s   rounds seen %d   messages buffered %d", reb, t.rounds, buffered),
		fmt.Sprintf("handoffs seen: begun %d, re-allocated %d, failed %d", t.started, t.finished, t.failed),
		"",
	}
	fl := m.flights()
	half := max((height-len(lines))/2, 3)
	title := st.header.Render(fmt.Sprintf("in flight (%d)", len(fl)))
	if note := m.detailsNote(); note != "" {
		title += "  " + note
	}
	lines = append(lines, title,
		st.header.Render(fmt.Sprintf("  %-15s %-9s %-7s %-17s %8s %s", "TYPE/SHARD", "FROM", "ELAPSED", "PHASE", "BUFFERED", "CAUSE")))
	room, used := half-2, 0
	for i, f := range fl {
		rows := m.flightLines(f)
		need := len(rows)
		if i < len(fl)-1 {
			need++ // keep a line for "… more"
		}
		if used+need > room {
			lines = append(lines, st.dim.Render(fmt.Sprintf("  … %d more", len(fl)-i)))
			break
		}
		lines = append(lines, rows...)
		used += len(rows)
	}
	if len(fl) == 0 {
		lines = append(lines, st.dim.Render("  none"))
	}
	recent := t.recent()
	lines = append(lines, "", st.header.Render(fmt.Sprintf("finished (last %d)", len(recent))),
		st.header.Render(fmt.Sprintf("  %-16s %-10s %-10s %-8s %-8s %s", "TYPE/SHARD", "FROM", "TO", "STOPPED", "TOTAL", "CAUSE")))
	for i, d := range recent {
		if len(lines) >= height {
			break
		}
		if len(lines) == height-1 && i < len(recent)-1 {
			lines = append(lines, st.dim.Render(fmt.Sprintf("  … %d more", len(recent)-i)))
			break
		}
		to := shortID(d.to)
		if d.failed {
			to = "FAILED(" + d.phase + ")"
		}
		row := fmt.Sprintf("  %s %s %s %-8s %-8s %s", pad(clip(d.key.typ+"/"+d.key.shard, 16), 16), pad(shortID(orDash(d.from)), 10), pad(to, 10), fmtDuration(d.stoppedIn), fmtDuration(d.total), d.cause)
		if d.failed {
			row = st.bad.Render(row)
		}
		lines = append(lines, row)
	}
	if len(recent) == 0 {
		lines = append(lines, st.dim.Render("  none yet"))
	}
	return lines
}
