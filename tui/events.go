package tui

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/shardmesh/shardmesh/admin/adminpb"
)

// eventLog is the Events view: a bounded window of the newest watch events, filtered by
// entity type, member and text, scrolled from the newest.
type eventLog struct {
	buf     []*adminpb.WatchEvent // ring of the newest cap(buf) events
	next    int
	total   uint64 // every event seen
	dropped int64  // lost because the dashboard fell behind

	typeFilter string // "" every type
	nodeFilter string // "" every member
	filter     textFilter
	back       int // how many matching events the view is scrolled back from the newest
	types      []string
}

func newEventLog(n int) eventLog { return eventLog{buf: make([]*adminpb.WatchEvent, 0, n)} }

// add puts an event in the window, dropping the oldest when it is full.
func (l *eventLog) add(ev *adminpb.WatchEvent) {
	l.total++
	if len(l.buf) < cap(l.buf) {
		l.buf = append(l.buf, ev)
	} else {
		l.buf[l.next] = ev
		l.next = (l.next + 1) % len(l.buf)
	}
	if ev.EntityType != "" && !slices.Contains(l.types, ev.EntityType) && len(l.types) < 64 {
		l.types = append(l.types, ev.EntityType)
		slices.Sort(l.types)
	}
	if l.back > 0 && l.matches(ev) {
		l.back++ // keep the scrolled view still while new events arrive
	}
}

// newest returns the i-th newest event in the window (0 the newest).
func (l *eventLog) newest(i int) *adminpb.WatchEvent {
	n := len(l.buf)
	if i >= n {
		return nil
	}
	if n < cap(l.buf) {
		return l.buf[n-1-i]
	}
	return l.buf[(l.next+n-1-i)%n]
}

// matches reports whether ev passes the filters.
func (l *eventLog) matches(ev *adminpb.WatchEvent) bool {
	if l.typeFilter != "" && ev.EntityType != l.typeFilter {
		return false
	}
	if l.nodeFilter != "" && ev.From != l.nodeFilter && ev.To != l.nodeFilter && ev.Member != l.nodeFilter && ev.Origin != l.nodeFilter &&
		!slices.Contains(ev.Shards, l.nodeFilter) {
		return false
	}
	return l.filter.match(ev.Kind, ev.Shard, ev.Cause, ev.Phase, ev.Status, ev.Detail, ev.EntityType)
}

// key handles the Events view's keys.
func (l *eventLog) key(msg tea.KeyMsg, k keyMap, height int, members []*adminpb.MemberInfo) {
	page := max(height-3, 1)
	switch {
	case key.Matches(msg, k.Up):
		l.back++
	case key.Matches(msg, k.Down):
		l.back--
	case key.Matches(msg, k.PageUp):
		l.back += page
	case key.Matches(msg, k.PageDown):
		l.back -= page
	case key.Matches(msg, k.Top):
		l.back = len(l.buf)
	case key.Matches(msg, k.Bottom):
		l.back = 0
	case key.Matches(msg, k.FilterType):
		l.typeFilter = cycle(l.types, l.typeFilter)
		l.back = 0
	case key.Matches(msg, k.FilterNode):
		ids := make([]string, 0, len(members))
		for _, m := range members {
			ids = append(ids, m.Node)
		}
		l.nodeFilter = cycle(ids, l.nodeFilter)
		l.back = 0
	case key.Matches(msg, k.FilterText):
		l.filter.editing = true
	case key.Matches(msg, k.Back):
		l.typeFilter, l.nodeFilter, l.filter.text, l.back = "", "", "", 0
	}
	l.back = max(0, min(l.back, len(l.buf)))
}

// cycle returns the value after cur in vals, "" (every) after the last.
func cycle(vals []string, cur string) string {
	if len(vals) == 0 {
		return ""
	}
	if cur == "" {
		return vals[0]
	}
	i := slices.Index(vals, cur)
	if i < 0 || i == len(vals)-1 {
		return ""
	}
	return vals[i+1]
}

// eventsView renders the Events view: the filter line, then the newest matching events
// that fit, oldest at the top.
func (m Model) eventsView(height int) []string {
	l := &m.events
	st := m.styles
	text := l.filter.text
	if l.filter.editing {
		text += "▏"
	}
	filter := fmt.Sprintf("type %s · node %s · text %q", orAll(l.typeFilter), orAll(shortID(l.nodeFilter)), text)
	where := "newest"
	if l.back > 0 {
		where = fmt.Sprintf("scrolled back %d", l.back)
	}
	info := fmt.Sprintf("window %d/%d of %d seen · %s/s · %s", len(l.buf), cap(l.buf), l.total, fmtRate(m.rate.perSecond(m.now)), where)
	if l.dropped > 0 {
		info += st.warn.Render(fmt.Sprintf(" · %d dropped (fell behind)", l.dropped))
	}
	lines := []string{filter, st.dim.Render(info)}
	page := height - len(lines)
	// Walk back from the newest, skipping the scrolled-back ones, collecting a page.
	picked := make([]*adminpb.WatchEvent, 0, page)
	skip := l.back
	for i := 0; len(picked) < page; i++ {
		ev := l.newest(i)
		if ev == nil {
			break
		}
		if !l.matches(ev) {
			continue
		}
		if skip > 0 {
			skip--
			continue
		}
		picked = append(picked, ev)
	}
	if len(picked) == 0 {
		lines = append(lines, st.dim.Render("no events yet (or none match the filter)"))
	}
	for i := len(picked) - 1; i >= 0; i-- {
		lines = append(lines, eventLine(picked[i], m.cfg.Location))
	}
	return lines
}

func orAll(s string) string {
	if s == "" {
		return "all"
	}
	return s
}

// eventLine formats an event in one line, as shardctl watch does, more tightly.
func eventLine(ev *adminpb.WatchEvent, loc *time.Location) string {
	var b strings.Builder
	b.WriteString(time.UnixMilli(ev.AtUnixMs).In(loc).Format("15:04:05.000"))
	b.WriteByte(' ')
	fmt.Fprintf(&b, "%-18s", ev.Kind)
	add := func(k, v string) {
		if v != "" {
			b.WriteString(" ")
			b.WriteString(k)
			b.WriteByte('=')
			b.WriteString(v)
		}
	}
	add("type", ev.EntityType)
	add("shard", ev.Shard)
	add("from", shortID(ev.From))
	add("to", shortID(ev.To))
	if ev.TookMs != 0 || ev.Kind == "handoff-completed" {
		add("took", (time.Duration(ev.TookMs) * time.Millisecond).String())
	}
	add("cause", ev.Cause)
	add("phase", ev.Phase)
	if len(ev.Shards) > 0 {
		add("shards", strconv.Itoa(len(ev.Shards)))
	}
	add("member", shortID(ev.Member))
	add("was", ev.Previous)
	add("by", shortID(ev.Origin))
	if ev.Detail != "" {
		b.WriteString(" ")
		b.WriteString(strconv.Quote(ev.Detail))
	}
	return b.String()
}

// rateMeter counts events per second over the last rateWindow seconds.
type rateMeter struct {
	buckets [rateWindow + 1]struct {
		sec int64
		n   uint32
	}
}

const rateWindow = 10

func (r *rateMeter) add(at time.Time) {
	s := at.Unix()
	b := &r.buckets[s%int64(len(r.buckets))]
	if b.sec != s {
		b.sec, b.n = s, 0
	}
	b.n++
}

// perSecond is the mean rate over the last rateWindow full seconds before now.
func (r *rateMeter) perSecond(now time.Time) float64 {
	s := now.Unix()
	var n uint32
	for _, b := range r.buckets {
		if b.sec < s && b.sec >= s-rateWindow {
			n += b.n
		}
	}
	return float64(n) / rateWindow
}
