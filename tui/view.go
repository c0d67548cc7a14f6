package tui

import (
	"fmt"
	"strings"

	"github.com/charmbracelet/bubbles/key"
	"github.com/charmbracelet/x/ansi"
)

// View renders the screen: a title line, the tabs, the view, a status line and the help
// bar, cut to the terminal's width and height.
func (m Model) View() string {
	if m.conn != connUp {
		return m.unreachableView()
	}
	helpLines := m.helpLines()
	bodyHeight := max(m.height-3-len(helpLines), 1)
	var body []string
	switch m.view {
	case viewCluster:
		body = m.clusterView(bodyHeight)
	case viewShards:
		body = m.shardsView(bodyHeight)
	case viewHandoffs:
		body = m.handoffsView(bodyHeight)
	case viewEvents:
		body = m.eventsView(bodyHeight)
	case viewActions:
		body = m.actionsView()
	}
	lines := make([]string, 0, m.height)
	lines = append(lines, m.titleLine(), m.tabsLine())
	lines = append(lines, strings.Split(fit(body, m.width, bodyHeight), "\n")...)
	lines = append(lines, m.statusLine())
	lines = append(lines, helpLines...)
	return fit(lines, m.width, m.height)
}

// titleLine names the entry member and says how fresh the data is.
func (m Model) titleLine() string {
	st := m.styles
	entry := shortID(m.src.Entry())
	s := st.title.Render("shardmesh") + " via " + entry
	if m.cluster.at.IsZero() {
		return s + "  connecting…"
	}
	s += fmt.Sprintf("  updated %s", m.cluster.at.In(m.cfg.Location).Format("15:04:05"))
	if m.cluster.err != nil {
		s += "  " + st.bad.Render(fmt.Sprintf("STALE %s: %v", fmtDuration(m.now.Sub(m.cluster.at)), m.cluster.err))
	}
	if m.watchErr != nil {
		s += "  " + st.warn.Render("events: "+m.watchErr.Error())
	}
	return s
}

// tabsLine shows the views with their keys, the current one marked.
func (m Model) tabsLine() string {
	st := m.styles
	parts := make([]string, 0, len(viewNames))
	for i, name := range viewNames {
		label := fmt.Sprintf("%d %s", i+1, name)
		if view(i) == m.view {
			parts = append(parts, st.activeTab.Render("["+label+"]"))
		} else {
			parts = append(parts, st.tab.Render(" "+label+" "))
		}
	}
	return strings.Join(parts, " ")
}

// statusLine is the confirmation prompt, or the last action's outcome.
func (m Model) statusLine() string {
	st := m.styles
	status := m.status
	if m.now.Sub(m.statusAt) >= statusTTL {
		status = "" // an outcome shows for a while, not for good
	}
	switch f := (&m).typing(); {
	case m.confirm != nil:
		return st.prompt.Render(m.confirm.question())
	case f != nil:
		return st.prompt.Render("filter: " + f.text + "▏ (enter to keep, esc to stop typing)")
	case status == "" && m.cluster.err != nil:
		return st.bad.Render("member list: " + m.cluster.err.Error())
	case status == "":
		return ""
	case m.statusBad:
		return st.bad.Render(m.status)
	}
	return st.status.Render(m.status)
}

// helpLines is the help bar: the keys of the current view (all of them with ?).
func (m Model) helpLines() []string {
	k := m.keys
	m.help.Width = m.width
	views := []key.Binding{k.Quit, k.Next, k.Help}
	var local []key.Binding
	switch m.view {
	case viewCluster:
		local = []key.Binding{k.Up, k.Down, k.Shutdown, k.Drain, k.Undrain, k.Rebalance, k.Sort, k.FilterText}
	case viewActions:
		local = []key.Binding{k.Up, k.Down, k.Shutdown, k.Drain, k.Undrain, k.Rebalance}
	case viewShards:
		if m.shards.drill != nil {
			local = []key.Binding{k.Back, k.Up, k.Down, k.PageDown}
		} else {
			local = []key.Binding{k.Up, k.Down, k.Enter, k.Sort, k.FilterText}
		}
	case viewHandoffs:
		local = []key.Binding{k.Rebalance}
	case viewEvents:
		local = []key.Binding{k.Up, k.Down, k.FilterType, k.FilterNode, k.FilterText, k.Back}
	}
	if m.fullHelp {
		all := m.help.FullHelpView(distinctKeys(
			[]key.Binding{k.Cluster, k.Shards, k.Handoffs, k.Events, k.Actions},
			[]key.Binding{k.Next, k.Prev, k.Refresh, k.Help, k.Quit},
			[]key.Binding{k.Up, k.Down, k.PageUp, k.PageDown, k.Top, k.Bottom},
			local,
		))
		return strings.Split(all, "\n")
	}
	return []string{m.help.ShortHelpView(append(views, local...))}
}

// distinctKeys returns the groups of bindings with each key listed once, where it first
// appears; groups left empty are dropped.
func distinctKeys(groups ...[]key.Binding) [][]key.Binding {
	seen := map[string]bool{}
	var out [][]key.Binding
	for _, g := range groups {
		var kept []key.Binding
		for _, b := range g {
			if h := b.Help().Key; !seen[h] {
				seen[h] = true
				kept = append(kept, b)
			}
		}
		if len(kept) > 0 {
			out = append(out, kept)
		}
	}
	return out
}

// unreachableView is the whole screen while the entry member cannot be reached: what was
// tried, why it failed, and when the next try is.
func (m Model) unreachableView() string {
	st := m.styles
	lines := []string{st.title.Render("shardmesh dashboard"), ""}
	switch m.conn {
	case connConnecting:
		lines = append(lines, "connecting to "+m.cfg.Target+" …")
		if m.connErr != nil {
			lines = append(lines, "", st.dim.Render("last try: "+m.connErr.Error()))
		}
	case connStopped:
		lines = append(lines,
			st.bad.Render("Cannot talk to the member: a configuration error."),
			"",
			"tried:  "+m.cfg.Target,
			"error:  "+m.connErr.Error(),
			"",
			"Not trying again: fix the command line (--cluster-key, --node / --data-dir, --identity) and",
			"start the dashboard again, or press r to try once more.",
		)
	case connFailed:
		lines = append(lines,
			st.bad.Render("Cannot reach the member."),
			"",
			"tried:  "+m.cfg.Target,
			"error:  "+m.connErr.Error(),
			"",
			fmt.Sprintf("Trying again in %s (try %d).", fmtDuration(retryDelay(m.attempt)), m.attempt+2),
			"",
			"Check that the member runs and that --node / --data-dir and --cluster-key are right.",
		)
	}
	wrapped := make([]string, 0, len(lines)+2)
	for _, l := range lines {
		wrapped = append(wrapped, wrap(l, m.width)...)
	}
	for len(wrapped) < m.height-1 {
		wrapped = append(wrapped, "")
	}
	wrapped = append(wrapped[:m.height-1], m.help.ShortHelpView([]key.Binding{key.NewBinding(key.WithKeys("r"), key.WithHelp("r", "retry now")), m.keys.Quit}))
	return fit(wrapped, m.width, m.height)
}

// wrap breaks a line into lines of at most width cells, at spaces where it can.
func wrap(s string, width int) []string {
	return strings.Split(ansi.Wrap(s, width, "/"), "\n")
}
