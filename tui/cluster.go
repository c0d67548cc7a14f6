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

// clusterState is the Cluster view's data: the member list, and what stats says of each
// member.
type clusterState struct {
	resp      *adminpb.MembersResponse
	members   []*adminpb.MemberInfo // Removed members left out, in up order
	at        time.Time             // when the list arrived
	err       error                 // the last ask failed: the list is stale
	errAt     time.Time
	firstSeen map[string]time.Time // when the dashboard first saw each member's incarnation
	seenInc   map[string]uint64    // the incarnation firstSeen is about
	initial   map[string]bool      // members (incarnations) there when the dashboard started
	selected  string               // the selected member's peer id
	perMember map[string]memberStats
	statsAt   time.Time
	// delivered is each member's count of messages handed to entities at the last stats;
	// msgRate the cluster-wide rate between the last two (members that restarted or are
	// new since count from their first answer).
	delivered map[string]uint64
	msgRate   float64
	rateKnown bool

	filter textFilter
	order  int // index in clusterOrders
}

// clusterOrders are the Cluster view's orders, in the order o cycles through them.
var clusterOrders = []string{"age", "member", "status", "shards", "entities"}

// memberStats is what the last stats said of one member.
type memberStats struct {
	answered     bool
	err          string // why it did not answer
	shards       int
	entities     uint64
	buffered     uint64
	coordinators []string // types whose coordinator runs there
	status       string   // as the member sees itself
}

func newClusterState() clusterState {
	return clusterState{firstSeen: map[string]time.Time{}, seenInc: map[string]uint64{}, perMember: map[string]memberStats{}}
}

// applyMembers takes a new member list, or marks the old one stale.
func (c *clusterState) applyMembers(resp *adminpb.MembersResponse, err error, at time.Time) {
	if err != nil {
		c.err, c.errAt = err, at
		return
	}
	first := c.resp == nil
	c.resp, c.err, c.at = resp, nil, at
	c.members = c.members[:0]
	for _, mem := range resp.GetMembers() {
		if mem.Status == "Removed" {
			continue
		}
		c.members = append(c.members, mem)
	}
	slices.SortStableFunc(c.members, func(a, b *adminpb.MemberInfo) int {
		if a.UpNumber != b.UpNumber && a.UpNumber != 0 && b.UpNumber != 0 {
			return int(a.UpNumber) - int(b.UpNumber)
		}
		return strings.Compare(a.Node, b.Node)
	})
	if first {
		c.initial = map[string]bool{}
	}
	for _, mem := range c.members {
		if _, ok := c.firstSeen[mem.Node]; !ok || c.seenInc[mem.Node] != mem.Incarnation {
			// A new member, or a new incarnation of one (it restarted): its age starts now.
			c.firstSeen[mem.Node], c.seenInc[mem.Node] = at, mem.Incarnation
			c.initial[mem.Node] = first
		}
	}
	if c.member(c.selected) == nil && len(c.members) > 0 {
		c.selected = c.members[0].Node
	}
}

// applyStats takes what stats says of each member.
func (c *clusterState) applyStats(resp *adminpb.StatsResponse, at time.Time) {
	per := make(map[string]memberStats, len(resp.GetMembers())+len(resp.GetFailed()))
	for _, ls := range resp.GetMembers() {
		ms := memberStats{answered: true, status: ls.Status}
		for _, r := range ls.Regions {
			ms.shards += len(r.Shards)
			ms.buffered += r.Buffered
			for _, sh := range r.Shards {
				ms.entities += sh.Entities
			}
			if r.CoordinatorHere {
				ms.coordinators = append(ms.coordinators, r.EntityType)
			}
		}
		per[ls.Node] = ms
	}
	for _, f := range resp.GetFailed() {
		per[f.Node] = memberStats{err: f.Error}
	}
	delivered := make(map[string]uint64, len(resp.GetMembers()))
	var sum uint64
	for _, ls := range resp.GetMembers() {
		delivered[ls.Node] = ls.MessagesDelivered
		if prev, ok := c.delivered[ls.Node]; ok && ls.MessagesDelivered >= prev {
			sum += ls.MessagesDelivered - prev
		}
	}
	if dt := at.Sub(c.statsAt).Seconds(); c.delivered != nil && dt > 0 {
		c.msgRate, c.rateKnown = float64(sum)/dt, true
	}
	c.delivered = delivered
	c.perMember, c.statsAt = per, at
}

// member finds a member by peer id.
func (c *clusterState) member(node string) *adminpb.MemberInfo {
	for _, mem := range c.members {
		if mem.Node == node {
			return mem
		}
	}
	return nil
}

// selectedMember returns the selected member, if any.
func (c *clusterState) selectedMember() *adminpb.MemberInfo { return c.member(c.selected) }

// visible returns the members the Cluster view lists: those that match its filter (on id,
// status, roles and app version), in its order.
func (c *clusterState) visible() []*adminpb.MemberInfo {
	out := make([]*adminpb.MemberInfo, 0, len(c.members))
	for _, mem := range c.members {
		if c.filter.match(mem.Node, mem.Status, strings.Join(mem.Roles, ","), mem.AppVersion) {
			out = append(out, mem)
		}
	}
	stat := func(m *adminpb.MemberInfo) memberStats { return c.perMember[m.Node] }
	var cmp func(a, b *adminpb.MemberInfo) int
	switch clusterOrders[c.order] {
	case "member":
		cmp = func(a, b *adminpb.MemberInfo) int { return strings.Compare(a.Node, b.Node) }
	case "status":
		cmp = func(a, b *adminpb.MemberInfo) int { return strings.Compare(a.Status, b.Status) }
	case "shards":
		cmp = func(a, b *adminpb.MemberInfo) int { return stat(b).shards - stat(a).shards }
	case "entities":
		cmp = func(a, b *adminpb.MemberInfo) int { return cmpDesc(stat(a).entities, stat(b).entities) }
	default:
		return out // age: the member list's own order (up-number)
	}
	slices.SortStableFunc(out, cmp)
	return out
}

// selectListed moves the selection to the first member the Cluster view lists when the
// filter hides the selected one, so that an action never targets a member out of sight.
func (c *clusterState) selectListed() {
	if visible := c.visible(); len(visible) > 0 && !slices.Contains(visible, c.selectedMember()) {
		c.selected = visible[0].Node
	}
}

// cmpDesc orders larger values first.
func cmpDesc(a, b uint64) int {
	switch {
	case a > b:
		return -1
	case a < b:
		return 1
	}
	return 0
}

// move moves the selection among the listed members.
func (c *clusterState) move(msg tea.KeyMsg, k keyMap) {
	c.moveIn(c.members, msg, k)
}

// moveIn moves the selection within list.
func (c *clusterState) moveIn(list []*adminpb.MemberInfo, msg tea.KeyMsg, k keyMap) {
	i := slices.IndexFunc(list, func(m *adminpb.MemberInfo) bool { return m.Node == c.selected })
	switch {
	case key.Matches(msg, k.Up):
		i--
	case key.Matches(msg, k.Down):
		i++
	case key.Matches(msg, k.Top):
		i = 0
	case key.Matches(msg, k.Bottom):
		i = len(list) - 1
	default:
		return
	}
	if len(list) > 0 {
		c.selected = list[min(max(i, 0), len(list)-1)].Node
	}
}

// clusterView renders the Cluster view.
func (m Model) clusterView(height int) []string {
	c := &m.cluster
	st := m.styles
	var lines []string
	var buffered uint64
	for _, ms := range c.perMember {
		buffered += ms.buffered
	}
	leader, oldest := "-", "-"
	if c.resp != nil {
		leader, oldest = shortID(c.resp.Leader), shortID(c.resp.Oldest)
	}
	conv := "converged"
	if c.resp != nil && !c.resp.Converged {
		conv = st.warn.Render("not converged")
	}
	lines = append(lines,
		fmt.Sprintf("%s  leader %s  oldest %s  %s", plural(len(c.members), "member"), leader, oldest, conv),
		fmt.Sprintf("messages %s/s  events %s/s  handoffs in flight %d  buffered %d", msgRate(c), fmtRate(m.rate.perSecond(m.now)), m.inflightCount(), buffered))
	wide := m.width >= 110
	header := fmt.Sprintf("  %-10s %-8s %-5s %-9s %-7s %-7s %6s %7s  %s", "MEMBER", "STATUS", "REACH", "ROLES", "VERSION", "AGE", "SHARDS", "ENTITY", "MARKS")
	if wide {
		header = fmt.Sprintf("  %-10s %-8s %-5s %-10s %-7s %-8s %4s %6s %8s %5s  %s", "MEMBER", "STATUS", "REACH", "ROLES", "VERSION", "AGE", "UP#", "SHARDS", "ENTITIES", "BUF", "MARKS")
	}
	visible := c.visible()
	lines = append(lines, st.dim.Render(filterLine(clusterOrders[c.order], c.filter.text, c.filter.editing)), st.header.Render(header))
	switch {
	case len(c.members) == 0:
		lines = append(lines, st.dim.Render("  waiting for the member list"))
	case len(visible) == 0:
		lines = append(lines, st.dim.Render(fmt.Sprintf("  no member matches %q (esc clears the filter)", c.filter.text)))
	}
	for _, mem := range visible {
		ms, ok := c.perMember[mem.Node]
		reach := "yes"
		if !mem.Reachable {
			reach = "NO"
		}
		shards, entities, bufd := "-", "-", "-"
		if ok && ms.answered {
			shards, entities, bufd = fmt.Sprint(ms.shards), fmt.Sprint(ms.entities), fmt.Sprint(ms.buffered)
		}
		marks := memberMarks(mem, ms, ok, mem.Node == c.resp.GetSelf(), wide)
		age := m.age(mem.Node)
		roles := strings.Join(mem.Roles, ",")
		var row string
		if wide {
			row = fmt.Sprintf("%s %-8s %-5s %-10s %-7s %s %4d %6s %8s %5s  %s", pad(shortID(mem.Node), 10), mem.Status, reach, clip(orDash(roles), 10), clip(orDash(mem.AppVersion), 7), pad(age, 8), mem.UpNumber, shards, entities, bufd, marks)
		} else {
			row = fmt.Sprintf("%s %-8s %-5s %-9s %-7s %s %6s %7s  %s", pad(shortID(mem.Node), 10), mem.Status, reach, clip(orDash(roles), 9), clip(orDash(mem.AppVersion), 7), pad(age, 7), shards, entities, marks)
		}
		lines = append(lines, m.rowLine(mem.Node == c.selected, row, !mem.Reachable || (ok && !ms.answered)))
	}
	var problems []string
	for _, mem := range c.members {
		if ms, ok := c.perMember[mem.Node]; ok && !ms.answered {
			problems = append(problems, fmt.Sprintf("%s did not answer stats: %s", shortID(mem.Node), ms.err))
		}
	}
	if len(problems) > 0 {
		lines = append(lines, "")
		for _, p := range problems {
			lines = append(lines, st.warn.Render(p))
		}
	}
	if wide {
		lines = append(lines, "", st.dim.Render("age: since this dashboard first saw the member (≥: it was there at start) · coord:T runs T's coordinator"))
	} else {
		lines = append(lines, "", st.dim.Render("marks: O oldest · L leader · C runs a coordinator · E entry · ! STALE"),
			st.dim.Render("age: since this dashboard first saw it (≥: it was there at start)"))
	}
	return lines[:min(len(lines), height)]
}

// age is how long the dashboard has seen member node.
func (m Model) age(node string) string {
	seen, ok := m.cluster.firstSeen[node]
	if !ok {
		return "-"
	}
	s := fmtDuration(m.now.Sub(seen))
	if m.cluster.initial[node] {
		s = "≥" + s
	}
	return s
}

// rowLine renders a selectable row: a ">" marker and reverse video when selected.
func (m Model) rowLine(selected bool, row string, bad bool) string {
	if selected {
		return m.styles.selected.Render("> " + row)
	}
	if bad {
		return "  " + m.styles.bad.Render(row)
	}
	return "  " + row
}

// memberMarks are a member's marks: oldest, leader, the coordinators it runs, the entry
// member, stale when it did not answer stats. Narrow: one letter each.
func memberMarks(mem *adminpb.MemberInfo, ms memberStats, inStats, entry, wide bool) string {
	var marks []string
	add := func(long, short string) {
		if wide {
			marks = append(marks, long)
		} else {
			marks = append(marks, short)
		}
	}
	if mem.Oldest {
		add("oldest", "O")
	}
	if mem.Leader {
		add("leader", "L")
	}
	if inStats && ms.answered {
		for i, t := range ms.coordinators {
			if wide || i == 0 {
				add("coord:"+t, "C")
			}
		}
	}
	if entry {
		add("entry", "E")
	}
	if inStats && !ms.answered {
		add("STALE: no answer to stats", "!STALE")
	}
	if wide {
		return strings.Join(marks, " ")
	}
	return strings.Join(marks, "")
}

// msgRate renders the cluster-wide message rate ("-" until two stats answers came).
func msgRate(c *clusterState) string {
	if !c.rateKnown {
		return "-"
	}
	return fmtRate(c.msgRate)
}
