package tui

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/shardmesh/shardmesh/admin/adminpb"
)

// shardsState is the Shards view's data: per entity type, the regions of every member
// with their shards and live entities, and the members that did not answer.
type shardsState struct {
	all     []typeShards // every type's regions, as stats said, by type and member
	types   []typeShards // what the view shows: all, filtered and sorted
	rows    []regionRow  // every selectable region row, in screen order
	cursor  int
	at      time.Time
	err     error // the last stats failed: what is shown is stale
	errAt   time.Time
	drill   *drillState
	members []*adminpb.MemberInfo

	filter textFilter // on the type and the member id
	order  int        // index in shardsOrders
}

// shardsOrders are the orders of the regions of each type, as o cycles through them.
var shardsOrders = []string{"member", "shards", "entities"}

// typeShards is one entity type's regions.
type typeShards struct {
	name      string
	regions   []regionRow
	shards    int
	entities  uint64
	maxShards int
	failed    []*adminpb.FailedMember // members that did not answer, with the type's shards there
	proxies   int
}

// regionRow is one member's region of a type.
type regionRow struct {
	typ, node   string
	shards      int
	entities    uint64
	buffered    uint64
	coordinator bool
	registered  bool
}

// applyStats rebuilds the per-type picture from a stats answer. Its cost is in the shards
// (once per refresh), not in rendering.
func (s *shardsState) applyStats(resp *adminpb.StatsResponse, at time.Time) {
	byType := map[string]*typeShards{}
	get := func(t string) *typeShards {
		ts := byType[t]
		if ts == nil {
			ts = &typeShards{name: t}
			byType[t] = ts
		}
		return ts
	}
	for _, t := range resp.GetEntityTypes() {
		get(t)
	}
	for _, ls := range resp.GetMembers() {
		for _, r := range ls.Regions {
			ts := get(r.EntityType)
			if r.Proxy {
				ts.proxies++
				continue
			}
			row := regionRow{typ: r.EntityType, node: ls.Node, shards: len(r.Shards), buffered: r.Buffered, coordinator: r.CoordinatorHere, registered: r.Registered}
			for _, sh := range r.Shards {
				row.entities += sh.Entities
			}
			ts.regions = append(ts.regions, row)
			ts.shards += row.shards
			ts.entities += row.entities
			ts.maxShards = max(ts.maxShards, row.shards)
		}
	}
	for _, f := range resp.GetFailed() {
		for _, t := range f.Shards {
			get(t.EntityType)
		}
		for _, ts := range byType {
			ts.failed = append(ts.failed, f)
		}
	}
	names := make([]string, 0, len(byType))
	for t := range byType {
		names = append(names, t)
	}
	slices.Sort(names)
	s.all = s.all[:0]
	for _, t := range names {
		ts := byType[t]
		slices.SortFunc(ts.regions, func(a, b regionRow) int { return strings.Compare(a.node, b.node) })
		s.all = append(s.all, *ts)
	}
	s.arrange()
	s.at, s.err = at, nil
}

// arrange derives what the view shows from all: the types and regions that match the
// filter (a type whose name matches keeps every region), each type's regions in the view's
// order; the selection stays on its region when it is still shown.
func (s *shardsState) arrange() {
	var selected regionRow
	if r, ok := s.selectedRow(); ok {
		selected = r
	}
	s.types, s.rows = s.types[:0], s.rows[:0]
	for _, ts := range s.all {
		shown := ts
		if !s.filter.match(ts.name) {
			shown.regions = nil
			for _, r := range ts.regions {
				if s.filter.match(r.node) {
					shown.regions = append(shown.regions, r)
				}
			}
			if len(shown.regions) == 0 {
				continue
			}
		} else {
			shown.regions = slices.Clone(ts.regions)
		}
		switch shardsOrders[s.order] {
		case "shards":
			slices.SortStableFunc(shown.regions, func(a, b regionRow) int { return b.shards - a.shards })
		case "entities":
			slices.SortStableFunc(shown.regions, func(a, b regionRow) int { return cmpDesc(a.entities, b.entities) })
		}
		s.types = append(s.types, shown)
		s.rows = append(s.rows, shown.regions...)
	}
	s.cursor = max(0, min(s.cursor, len(s.rows)-1))
	for i, r := range s.rows {
		if r.typ == selected.typ && r.node == selected.node {
			s.cursor = i
		}
	}
}

func (s *shardsState) selectedRow() (regionRow, bool) {
	if s.cursor < 0 || s.cursor >= len(s.rows) {
		return regionRow{}, false
	}
	return s.rows[s.cursor], true
}

func (s *shardsState) move(msg tea.KeyMsg, k keyMap) {
	switch {
	case key.Matches(msg, k.Up):
		s.cursor--
	case key.Matches(msg, k.Down):
		s.cursor++
	case key.Matches(msg, k.Top):
		s.cursor = 0
	case key.Matches(msg, k.Bottom):
		s.cursor = len(s.rows) - 1
	}
	s.cursor = max(0, min(s.cursor, len(s.rows)-1))
}

// applyRegion takes the open region's state.
func (s *shardsState) applyRegion(msg regionMsg) {
	d := s.drill
	if d == nil || d.node != msg.node || d.typ != msg.typ {
		return // an answer for a region no longer open
	}
	d.loading = false
	d.at = msg.at
	if msg.err != nil {
		d.err = msg.err
		return
	}
	d.err = nil
	d.resp = msg.resp
	d.offset = min(d.offset, max(len(msg.resp.GetShards())-1, 0))
}

// drillState is an open region: its shards and their entities.
type drillState struct {
	node, typ string
	loading   bool
	resp      *adminpb.RegionStateResponse
	err       error
	at        time.Time
	offset    int
}

func (d *drillState) scroll(msg tea.KeyMsg, k keyMap, page int) {
	n := len(d.resp.GetShards())
	switch {
	case key.Matches(msg, k.Up):
		d.offset--
	case key.Matches(msg, k.Down):
		d.offset++
	case key.Matches(msg, k.PageUp):
		d.offset -= page
	case key.Matches(msg, k.PageDown):
		d.offset += page
	case key.Matches(msg, k.Top):
		d.offset = 0
	case key.Matches(msg, k.Bottom):
		d.offset = n - page
	}
	d.offset = max(0, min(d.offset, n-page))
}

// shardsView renders the Shards view: per type, a bar per region.
func (m Model) shardsView(height int) []string {
	s := &m.shards
	if s.drill != nil {
		return m.drillView(height)
	}
	st := m.styles
	var lines []string
	if s.at.IsZero() {
		return []string{st.dim.Render("waiting for stats")}
	}
	if s.err != nil {
		lines = append(lines, st.warn.Render(fmt.Sprintf("STALE: stats failed %s ago: %v", fmtDuration(m.now.Sub(s.errAt)), s.err)))
	}
	lines = append(lines, st.dim.Render(filterLine(shardsOrders[s.order], s.filter.text, s.filter.editing)))
	if len(s.types) == 0 && len(s.all) > 0 {
		lines = append(lines, st.dim.Render(fmt.Sprintf("  no type or member matches %q (esc clears the filter)", s.filter.text)))
	}
	barWidth := max(m.width-46, 8)
	cursorLine := 0
	row := 0
	for _, ts := range s.types {
		lines = append(lines, st.header.Render(fmt.Sprintf("%s  %d shards  %d entities  %d regions", ts.name, ts.shards, ts.entities, len(ts.regions))))
		for _, r := range ts.regions {
			n := 0
			if ts.maxShards > 0 {
				n = (r.shards*barWidth + ts.maxShards - 1) / ts.maxShards
			}
			mark := " "
			if r.coordinator {
				mark = "C"
			}
			bar := st.bar.Render(strings.Repeat("█", n)) + st.barEmpty.Render(strings.Repeat("·", barWidth-n))
			label := pad(shortID(r.node), 10) + mark + " "
			nums := fmt.Sprintf(" %5d sh %7d ent", r.shards, r.entities)
			sel := row == s.cursor
			if sel {
				cursorLine = len(lines)
				lines = append(lines, st.selected.Render("> "+label)+bar+st.selected.Render(nums))
			} else {
				lines = append(lines, "  "+label+bar+nums)
			}
			row++
		}
		if len(ts.regions) == 0 {
			lines = append(lines, st.dim.Render("  no region hosts shards of this type"))
		}
		for _, f := range ts.failed {
			n, unknown := 0, false
			for _, t := range f.Shards {
				if t.EntityType == ts.name {
					n, unknown = len(t.Shards), t.Unknown
				}
			}
			what := fmt.Sprintf("%d shards there per the coordinator", n)
			if unknown {
				what = "its shards unknown (no coordinator answered)"
			}
			lines = append(lines, st.bad.Render(fmt.Sprintf("  %s  no answer: %s; %s", pad(shortID(f.Node), 10), clip(f.Error, 40), what)))
		}
	}
	lines = append(lines, "", st.dim.Render("C: the type's coordinator runs there · enter: the region's shards and entities"))
	// Keep the cursor on screen.
	if cursorLine >= height {
		lines = lines[cursorLine-height+1:]
	}
	return lines
}

// drillView renders an open region.
func (m Model) drillView(height int) []string {
	d := m.shards.drill
	st := m.styles
	lines := []string{st.header.Render(fmt.Sprintf("region %s of %s   (esc: back)", shortID(d.node), d.typ))}
	switch {
	case d.loading && d.resp == nil:
		return append(lines, st.dim.Render("asking "+shortID(d.node)+" for its region state"))
	case d.err != nil && d.resp == nil:
		return append(lines, st.bad.Render("no answer: "+d.err.Error()))
	}
	shards := d.resp.GetShards()
	var total uint64
	for _, sh := range shards {
		total += sh.EntityCount
	}
	sum := fmt.Sprintf("%d shards  %d live entities", len(shards), total)
	if d.err != nil {
		sum += st.warn.Render("  STALE: " + d.err.Error())
	}
	if d.resp.Truncated {
		sum += "  (entity lists cut short)"
	}
	lines = append(lines, sum, st.header.Render(fmt.Sprintf("  %-12s %8s  %s", "SHARD", "ENTITIES", "ENTITY IDS")))
	page := height - len(lines)
	for i := d.offset; i < len(shards) && i < d.offset+page; i++ {
		sh := shards[i]
		ids := strings.Join(sh.Entities, " ")
		if sh.EntityCount > uint64(len(sh.Entities)) {
			ids += fmt.Sprintf(" … (+%d)", sh.EntityCount-uint64(len(sh.Entities)))
		}
		state := ""
		if sh.Stopping {
			state = " stopping"
		}
		lines = append(lines, fmt.Sprintf("  %s %8d  %s%s", pad(clip(sh.Shard, 12), 12), sh.EntityCount, orDash(ids), state))
	}
	if len(shards) == 0 {
		lines = append(lines, st.dim.Render("  no shards here"))
	}
	return lines
}
