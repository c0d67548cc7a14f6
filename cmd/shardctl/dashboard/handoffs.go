package dashboard

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/shardmesh/shardmesh/admin/adminpb"
)

// maxInflight bounds the handoffs followed at once: a stream that lost the end of many
// handoffs must not grow the dashboard without end.
const maxInflight = 10000

// stragglerAfter is how long a handoff runs before the Handoffs view marks it: the default
// handoff-timeout is a minute, and a healthy handoff takes milliseconds.
const stragglerAfter = 10 * time.Second

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

// phaseName says what a handoff phase means.
func phaseName(p string) string {
	switch p {
	case "begun":
		return "begun: regions start buffering"
	case "stopping":
		return "buffering; stopping entities"
	case "stopped":
		return "stopped; awaiting allocation"
	}
	return p
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
	inflight := make([]*handoff, 0, len(t.inflight))
	for _, h := range t.inflight {
		inflight = append(inflight, h)
	}
	slices.SortFunc(inflight, func(a, b *handoff) int {
		if c := a.began.Compare(b.began); c != 0 {
			return c
		}
		return strings.Compare(a.key.typ+"/"+a.key.shard, b.key.typ+"/"+b.key.shard)
	})
	half := max((height-len(lines))/2, 3)
	lines = append(lines, st.header.Render(fmt.Sprintf("in flight (%d)", len(inflight))),
		st.header.Render(fmt.Sprintf("  %-16s %-10s %-9s %-30s %s", "TYPE/SHARD", "FROM", "ELAPSED", "PHASE", "CAUSE")))
	for i, h := range inflight {
		if i >= half-2 {
			lines = append(lines, st.dim.Render(fmt.Sprintf("  … %d more", len(inflight)-i)))
			break
		}
		row := fmt.Sprintf("  %s %s %-9s %-30s %s", pad(clip(h.key.typ+"/"+h.key.shard, 16), 16), pad(shortID(h.from), 10), fmtDuration(m.now.Sub(h.began)), phaseName(h.phase), h.cause)
		if m.now.Sub(h.began) > stragglerAfter {
			row = st.warn.Render(row + "  STRAGGLER")
		}
		lines = append(lines, row)
	}
	if len(inflight) == 0 {
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
