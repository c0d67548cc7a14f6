package tui

import (
	"errors"
	"fmt"
	"time"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/shardmesh/shardmesh/admin"
	"github.com/shardmesh/shardmesh/admin/adminpb"
)

// disabled returns why action a cannot be asked now, or "".
func (m Model) disabled(a Action) string {
	if err := m.src.Supported(a); err != nil {
		return err.Error()
	}
	if m.admin.known && !m.admin.admin {
		return "this identity is not an admin (see above)"
	}
	if a.perMember() && m.cluster.selectedMember() == nil {
		return "no member selected"
	}
	switch r := m.rebalance; {
	case a == ActionPause && r.known && r.paused:
		return "rebalancing is paused already"
	case a == ActionResume && !r.known:
		return "not known to be paused (" + r.reason + ")"
	case a == ActionResume && !r.paused:
		return "rebalancing is not paused"
	}
	if a == ActionShutdown {
		if mem := m.cluster.selectedMember(); mem != nil && mem.Status != "Up" && mem.Status != "WeaklyUp" && mem.Status != "Joining" {
			return "member " + shortID(mem.Node) + " is " + mem.Status
		}
	}
	return ""
}

// ask asks the operator to confirm action a (or says why it cannot be done).
func (m Model) ask(a Action) (tea.Model, tea.Cmd) {
	if why := m.disabled(a); why != "" {
		m.setStatus(a.String()+" disabled: "+why, true)
		return m, nil
	}
	m.confirm = &pending{action: a, member: m.cluster.selectedMember()}
	return m, nil
}

// question is the confirmation prompt of p.
func (p *pending) question() string {
	node := shortID(p.member.GetNode())
	switch p.action {
	case ActionShutdown:
		return fmt.Sprintf("Shut down %s gracefully (hand off its shards, then leave)? y/N", node)
	case ActionDrain:
		return fmt.Sprintf("Drain %s (move its shards away, place none there)? y/N", node)
	case ActionUndrain:
		return fmt.Sprintf("Undrain %s (let it host shards again)? y/N", node)
	case ActionPause:
		return "Pause rebalancing cluster-wide? y/N"
	case ActionResume:
		return "Resume rebalancing? y/N"
	}
	return "?"
}

// confirmKey answers the confirmation prompt.
func (m Model) confirmKey(msg tea.KeyMsg) (tea.Model, tea.Cmd) {
	p := m.confirm
	m.confirm = nil
	if !key.Matches(msg, m.keys.Yes) {
		m.setStatus(p.action.String()+": cancelled", false)
		return m, nil
	}
	m.setStatus(fmt.Sprintf("%s %s: asked…", p.action, shortID(p.member.GetNode())), false)
	return m, m.actionCmd(p.action, p.member)
}

// actionDone reports an action's outcome; a refusal teaches the dashboard that its
// identity is not an admin one.
func (m Model) actionDone(msg actionDoneMsg) (tea.Model, tea.Cmd) {
	m.now = later(m.now, msg.at)
	target := ""
	if msg.action.perMember() {
		target = " " + shortID(msg.node)
	}
	if msg.err != nil {
		var ce *admin.CallError
		if errors.As(msg.err, &ce) && ce.Code == adminpb.Code_REFUSED {
			m.admin = adminState{known: true, reason: ce.Message}
		}
		m.setStatus(fmt.Sprintf("%s%s failed: %v", msg.action, target, msg.err), true)
		return m, nil
	}
	switch msg.action {
	case ActionShutdown:
		m.setStatus(fmt.Sprintf("shutdown%s accepted: it hands off its shards, then leaves", target), false)
	case ActionPause, ActionResume:
		m.setStatus(msg.action.String()+": done", false)
		return m, m.rebalanceCmd()
	default:
		m.setStatus(fmt.Sprintf("%s%s: done", msg.action, target), false)
	}
	m.membersAsked, m.statsAsked = time.Time{}, time.Time{}
	return m, m.refresh()
}

// actionsView renders the Actions view: the selected member and every action, enabled or
// disabled with the reason.
func (m Model) actionsView() []string {
	st := m.styles
	who := "unknown yet (" + m.admin.reason + ")"
	switch {
	case m.admin.known && m.admin.admin:
		who = st.good.Render("admin")
	case m.admin.known:
		who = st.bad.Render("not an admin")
	}
	lines := []string{"identity: " + who}
	if m.admin.known && !m.admin.admin {
		lines = append(lines, "  refused by the member's admin check (down --check: changes nothing):")
		for _, l := range wrap(m.admin.reason, max(m.width-8, 20)) {
			lines = append(lines, "    "+l)
		}
	}
	lines = append(lines, "", st.header.Render("members (↑/↓ to select)"))
	for _, mem := range m.cluster.members {
		lines = append(lines, m.rowLine(mem.Node == m.cluster.selected, fmt.Sprintf("%-10s %-8s", shortID(mem.Node), mem.Status), !mem.Reachable))
	}
	lines = append(lines, "", st.header.Render("actions"))
	keys := map[Action]key.Binding{ActionShutdown: m.keys.Shutdown, ActionDrain: m.keys.Drain, ActionUndrain: m.keys.Undrain, ActionPause: m.keys.Rebalance, ActionResume: m.keys.Rebalance}
	for _, a := range actions {
		what := a.String()
		if a.perMember() {
			what += " " + shortID(m.cluster.selected)
		}
		line := fmt.Sprintf("  %-3s %-28s", keys[a].Help().Key, what)
		if why := m.disabled(a); why != "" {
			line += st.dim.Render("disabled: " + why)
		} else {
			line += st.good.Render("ready")
		}
		lines = append(lines, line)
	}
	lines = append(lines, "", st.dim.Render("every action asks for confirmation (y) first"))
	return lines
}
