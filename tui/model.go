package tui

import (
	"context"
	"errors"
	"time"

	"github.com/charmbracelet/bubbles/help"
	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"

	"github.com/shardmesh/shardmesh/admin"
	"github.com/shardmesh/shardmesh/admin/adminpb"
)

// Config says what the dashboard shows and how it reaches the cluster.
type Config struct {
	// Target names the entry member as the operator gave it, for the screen.
	Target string
	// Connect reaches the entry member. Required.
	Connect func(ctx context.Context) (Source, error)
	// Refresh is how often members and stats are asked again, and the handoffs in progress
	// while any are (or the Handoffs view is open). Default 2 s: fresh enough to watch a
	// shutdown, light on the members (stats and handoffs ask every member).
	Refresh time.Duration
	// CallTimeout bounds each call but the watch stream. Default 10 s.
	CallTimeout time.Duration
	// Now is the clock. Default time.Now; tests fix it.
	Now func() time.Time
	// Location is the time zone of event times. Default time.Local.
	Location *time.Location
	// Renderer renders the styles. Default lipgloss's, which honours NO_COLOR.
	Renderer *lipgloss.Renderer
	// EventWindow is how many events the Events view keeps. Default 2,000.
	EventWindow int
	// Completed is how many finished handoffs the Handoffs view keeps. Default 100.
	Completed int
}

func (c *Config) fill() error {
	if c.Connect == nil {
		return errors.New("dashboard: Config.Connect is required")
	}
	if c.Refresh <= 0 {
		c.Refresh = 2 * time.Second
	}
	if c.CallTimeout <= 0 {
		c.CallTimeout = 10 * time.Second
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Location == nil {
		c.Location = time.Local
	}
	if c.Renderer == nil {
		c.Renderer = lipgloss.DefaultRenderer()
	}
	if c.EventWindow <= 0 {
		c.EventWindow = 2000
	}
	if c.Completed <= 0 {
		c.Completed = 100
	}
	return nil
}

// view is one of the dashboard's screens.
type view int

// Views, in tab order.
const (
	viewCluster view = iota
	viewShards
	viewHandoffs
	viewEvents
	viewActions
	viewCount
)

var viewNames = [...]string{"Cluster", "Shards", "Handoffs", "Events", "Actions"}

// connState is how far the dashboard is in reaching the entry member.
type connState int

const (
	connConnecting connState = iota
	connFailed
	connStopped // a configuration error: no retry until the operator asks (r)
	connUp
)

// adminState is what the dashboard knows about its identity's rights.
type adminState struct {
	known  bool
	admin  bool
	reason string // why not, or why unknown
}

// pending is an action waiting for the operator's confirmation.
type pending struct {
	action Action
	member *adminpb.MemberInfo
}

// Model is the dashboard's state. Update never does I/O nor reads the clock.
type Model struct {
	cfg    Config
	ctx    context.Context
	keys   keyMap
	help   help.Model
	styles styles

	width, height int
	view          view
	fullHelp      bool

	conn    connState
	connErr error
	connAt  time.Time
	attempt int
	src     Source
	now     time.Time
	started time.Time
	// Refresh calls not answered yet, and when they were asked: a slow stats (a member
	// that does not answer holds it for the query timeout) does not hold back members.
	membersAsked, statsAsked time.Time
	// The handoffs call: when the last ask went out (zero once answered), and its number.
	handoffsAsked time.Time
	handoffsSeq   uint64

	cluster  clusterState
	shards   shardsState
	handoffs handoffTracker
	details  handoffDetails
	events   eventLog
	rate     rateMeter

	sub      *subscription
	watchGen int
	watchErr error

	admin     adminState
	rebalance rebalanceState
	confirm   *pending
	status    string
	statusBad bool
	statusAt  time.Time // when status was set: it shows for statusTTL
}

// rebalanceState is whether rebalancing is paused, as far as known.
type rebalanceState struct {
	known  bool
	paused bool
	reason string
}

// New makes the dashboard's model; ctx bounds every call it makes.
func New(ctx context.Context, cfg Config) (Model, error) {
	if err := cfg.fill(); err != nil {
		return Model{}, err
	}
	h := help.New()
	r := cfg.Renderer
	h.Styles = help.Styles{
		Ellipsis: r.NewStyle(), ShortKey: r.NewStyle().Bold(true), ShortDesc: r.NewStyle(), ShortSeparator: r.NewStyle(),
		FullKey: r.NewStyle().Bold(true), FullDesc: r.NewStyle(), FullSeparator: r.NewStyle(),
	}
	now := cfg.Now()
	m := Model{
		cfg: cfg, ctx: ctx, keys: newKeyMap(), help: h, styles: newStyles(r),
		width: 80, height: 24, now: now, started: now, connAt: now,
		cluster:  newClusterState(),
		handoffs: newHandoffTracker(cfg.Completed),
		details:  newHandoffDetails(),
		events:   newEventLog(cfg.EventWindow),
		admin:    adminState{reason: "checking whether this identity is an admin"},
	}
	m.rebalance.reason = "asking"
	return m, nil
}

// Init connects to the entry member.
func (m Model) Init() tea.Cmd { return m.connectCmd(0) }

// Update applies one message.
func (m Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.width, m.height = max(msg.Width, 20), max(msg.Height, 8)
		return m, nil
	case tea.KeyMsg:
		return m.key(msg)
	case connectedMsg:
		return m.connected(msg)
	case connectFailedMsg:
		if msg.attempt != m.attempt || m.conn == connUp {
			return m, nil
		}
		m.conn, m.connErr, m.connAt, m.now = connFailed, msg.err, msg.at, later(m.now, msg.at)
		if errors.As(msg.err, new(permanentError)) {
			m.conn = connStopped
			return m, nil
		}
		return m, m.retryCmd(m.attempt, retryDelay(m.attempt))
	case retryConnectMsg:
		if msg.attempt != m.attempt || m.conn != connFailed {
			return m, nil
		}
		m.attempt++
		m.conn = connConnecting
		return m, m.connectCmd(m.attempt)
	case tickMsg:
		m.now = later(m.now, msg.at)
		if m.conn != connUp {
			return m, nil
		}
		return m, tea.Batch(m.refresh(), m.tickCmd())
	case membersMsg:
		m.now = later(m.now, msg.at)
		m.membersAsked = time.Time{}
		m.cluster.applyMembers(msg.resp, msg.err, msg.at)
		m.cluster.selectListed()
		m.shards.members = m.cluster.members
		return m, nil
	case statsMsg:
		m.now = later(m.now, msg.at)
		m.statsAsked = time.Time{}
		if msg.err == nil {
			m.shards.applyStats(msg.resp, msg.at)
			m.cluster.applyStats(msg.resp, msg.at)
		}
		m.shards.err, m.shards.errAt = msg.err, msg.at
		return m, nil
	case handoffsMsg:
		m.now = later(m.now, msg.at)
		if msg.seq == m.handoffsSeq {
			m.handoffsAsked = time.Time{}
		}
		m.details.apply(msg.seq, msg.resp, msg.err, msg.at)
		return m, nil
	case regionMsg:
		m.now = later(m.now, msg.at)
		m.shards.applyRegion(msg)
		return m, nil
	case watchStartedMsg:
		if msg.sub.gen != m.watchGen || m.conn != connUp {
			return m, cancelCmd(msg.sub)
		}
		m.sub = msg.sub
		if m.watchErr != nil {
			// Events were missed while the stream was down: the handoffs in flight may
			// have ended unseen.
			m.watchErr = nil
			m.handoffs.forgetInflight()
		}
		return m, m.waitEventsCmd(msg.sub)
	case eventsMsg:
		if msg.sub != m.sub {
			return m, nil
		}
		m.now = later(m.now, msg.at)
		m.watchErr = nil
		m.applyEvents(msg)
		return m, m.waitEventsCmd(msg.sub)
	case watchEndedMsg:
		if msg.sub != m.sub {
			return m, nil
		}
		m.now = later(m.now, msg.at)
		m.sub, m.watchErr = nil, msg.err
		if msg.err == nil {
			return m, nil // the dashboard is ending
		}
		return m, m.watchRetryCmd(m.watchGen, 2*time.Second)
	case watchRetryMsg:
		if msg.gen != m.watchGen || m.sub != nil || m.conn != connUp {
			return m, nil
		}
		m.watchGen++
		return m, m.watchCmd(m.watchGen)
	case adminMsg:
		m.now = later(m.now, msg.at)
		m.admin = adminFrom(msg.err)
		return m, nil
	case rebalanceMsg:
		m.now = later(m.now, msg.at)
		m.rebalance = rebalanceState{known: msg.err == nil, paused: msg.paused}
		if msg.err != nil {
			m.rebalance.reason = msg.err.Error()
		}
		return m, nil
	case actionDoneMsg:
		return m.actionDone(msg)
	}
	return m, nil
}

// connected starts everything once the entry member answered.
func (m Model) connected(msg connectedMsg) (tea.Model, tea.Cmd) {
	if m.conn == connUp {
		return m, closeCmd(msg.src)
	}
	m.conn, m.connErr, m.src, m.now, m.connAt = connUp, nil, msg.src, later(m.now, msg.at), msg.at
	m.watchGen++
	return m, tea.Batch(m.refresh(), m.watchCmd(m.watchGen), m.adminCmd(), m.rebalanceCmd(), m.tickCmd())
}

// refresh asks for members and stats again (and the open region), each unless its last
// ask is still unanswered (and not older than the call timeout).
func (m *Model) refresh() tea.Cmd {
	var cmds []tea.Cmd
	if m.membersAsked.IsZero() || m.now.Sub(m.membersAsked) >= m.cfg.CallTimeout {
		m.membersAsked = m.now
		cmds = append(cmds, m.membersCmd())
	}
	if m.statsAsked.IsZero() || m.now.Sub(m.statsAsked) >= m.cfg.CallTimeout {
		m.statsAsked = m.now
		cmds = append(cmds, m.statsCmd())
	}
	if d := m.shards.drill; d != nil {
		if mem := m.cluster.member(d.node); mem != nil {
			cmds = append(cmds, m.regionCmd(mem, d.typ))
		}
	}
	cmds = append(cmds, m.askHandoffs())
	return tea.Batch(cmds...)
}

// askHandoffs asks for the handoffs in progress, only while the watch stream or the last
// answer says some are in flight or the Handoffs view is open (an idle cluster is not
// asked), and unless the last ask is still unanswered (and not older than the call
// timeout).
func (m *Model) askHandoffs() tea.Cmd {
	if m.conn != connUp || len(m.handoffs.inflight) == 0 && len(m.details.byKey) == 0 && m.view != viewHandoffs {
		return nil
	}
	if !m.handoffsAsked.IsZero() && m.now.Sub(m.handoffsAsked) < m.cfg.CallTimeout {
		return nil
	}
	m.handoffsSeq++
	m.handoffsAsked = m.now
	return m.handoffsCmd(m.handoffsSeq)
}

// applyEvents feeds a batch of watch events to the views that follow them.
func (m *Model) applyEvents(msg eventsMsg) {
	for _, ev := range msg.events {
		m.events.add(ev)
		m.handoffs.apply(ev)
		m.details.observe(ev, m.handoffsSeq)
		m.rate.add(msg.at)
	}
	m.events.dropped = msg.dropped
}

// Permanent marks an error of Config.Connect that trying again cannot fix — another cluster
// key, an address whose peer id is another member's, a member name that names none: the
// dashboard stops on it with the error instead of retrying (the operator may still press r).
func Permanent(err error) error { return permanentError{err} }

type permanentError struct{ err error }

func (e permanentError) Error() string { return e.err.Error() }
func (e permanentError) Unwrap() error { return e.err }

// retryDelay is the wait before connecting again: 1 s, doubling, at most 15 s.
func retryDelay(attempt int) time.Duration {
	d := time.Second << min(attempt, 4)
	return min(d, 15*time.Second)
}

// later returns the later of two times (answers may arrive out of order).
func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// adminFrom reads CheckAdmin's answer.
func adminFrom(err error) adminState {
	if err == nil {
		return adminState{known: true, admin: true}
	}
	var ce *admin.CallError
	if errors.As(err, &ce) && ce.Code == adminpb.Code_REFUSED {
		return adminState{known: true, reason: ce.Message}
	}
	return adminState{reason: "could not check this identity's rights: " + err.Error()}
}

// key handles a key press.
func (m Model) key(msg tea.KeyMsg) (tea.Model, tea.Cmd) {
	k := m.keys
	if msg.String() == "ctrl+c" {
		return m.quit()
	}
	if m.confirm != nil {
		return m.confirmKey(msg)
	}
	if f := m.typing(); f != nil {
		f.edit(msg)
		m.filtered()
		return m, nil
	}
	switch {
	case key.Matches(msg, k.Quit):
		return m.quit()
	case key.Matches(msg, k.Help):
		m.fullHelp = !m.fullHelp
		return m, nil
	case key.Matches(msg, k.Refresh):
		if m.conn == connFailed || m.conn == connStopped {
			m.attempt++
			m.conn = connConnecting
			return m, m.connectCmd(m.attempt)
		}
		if m.conn == connUp {
			m.membersAsked, m.statsAsked, m.handoffsAsked = time.Time{}, time.Time{}, time.Time{}
			return m, tea.Batch(m.refresh(), m.adminCmd(), m.rebalanceCmd())
		}
		return m, nil
	}
	if m.conn != connUp {
		return m, nil
	}
	prev := m.view
	switch {
	case key.Matches(msg, k.Cluster):
		m.view = viewCluster
	case key.Matches(msg, k.Shards):
		m.view = viewShards
	case key.Matches(msg, k.Handoffs):
		m.view = viewHandoffs
	case key.Matches(msg, k.Events):
		m.view = viewEvents
	case key.Matches(msg, k.Actions):
		m.view = viewActions
	case key.Matches(msg, k.Next):
		m.view = (m.view + 1) % viewCount
	case key.Matches(msg, k.Prev):
		m.view = (m.view + viewCount - 1) % viewCount
	case (m.view == viewCluster || m.view == viewActions) && key.Matches(msg, k.Shutdown):
		return m.ask(ActionShutdown)
	case (m.view == viewCluster || m.view == viewActions) && key.Matches(msg, k.Drain):
		return m.ask(ActionDrain)
	case (m.view == viewCluster || m.view == viewActions) && key.Matches(msg, k.Undrain):
		return m.ask(ActionUndrain)
	case (m.view == viewCluster || m.view == viewActions || m.view == viewHandoffs) && key.Matches(msg, k.Rebalance):
		if m.rebalance.known && m.rebalance.paused {
			return m.ask(ActionResume)
		}
		return m.ask(ActionPause)
	default:
		return m.viewKey(msg)
	}
	if m.view == viewHandoffs && prev != viewHandoffs {
		return m, m.askHandoffs() // details at once, not at the next refresh
	}
	return m, nil
}

// typing returns the text filter the operator is typing in the current view, or nil.
func (m *Model) typing() *textFilter {
	var f *textFilter
	switch {
	case m.view == viewEvents:
		f = &m.events.filter
	case m.view == viewCluster:
		f = &m.cluster.filter
	case m.view == viewShards && m.shards.drill == nil:
		f = &m.shards.filter
	}
	if f == nil || !f.editing {
		return nil
	}
	return f
}

// filtered brings the views up to a changed filter or order: the Shards view's rows, the
// Events view scrolled to the newest, the Cluster view's selection on a listed member.
func (m *Model) filtered() {
	m.events.back = 0
	m.shards.arrange()
	m.cluster.selectListed()
}

// listKey handles the keys of a view with a sortable, filterable list: o, / and esc.
func (m *Model) listKey(msg tea.KeyMsg, f *textFilter, order *int, orders int) bool {
	k := m.keys
	switch {
	case key.Matches(msg, k.Sort):
		*order = (*order + 1) % orders
	case key.Matches(msg, k.FilterText):
		f.editing = true
	case key.Matches(msg, k.Back):
		f.text = ""
	default:
		return false
	}
	m.filtered()
	return true
}

// viewKey handles the keys of the current view.
func (m Model) viewKey(msg tea.KeyMsg) (tea.Model, tea.Cmd) {
	switch m.view {
	case viewCluster:
		if !m.listKey(msg, &m.cluster.filter, &m.cluster.order, len(clusterOrders)) {
			m.cluster.moveIn(m.cluster.visible(), msg, m.keys)
		}
	case viewActions:
		m.cluster.move(msg, m.keys)
	case viewShards:
		return m.shardsKey(msg)
	case viewEvents:
		m.events.key(msg, m.keys, m.bodyHeight(), m.cluster.members)
	case viewHandoffs:
	}
	return m, nil
}

// shardsKey moves in the Shards view, opens a region and goes back.
func (m Model) shardsKey(msg tea.KeyMsg) (tea.Model, tea.Cmd) {
	k := m.keys
	s := &m.shards
	if s.drill != nil {
		switch {
		case key.Matches(msg, k.Back):
			s.drill = nil
		default:
			s.drill.scroll(msg, k, m.bodyHeight()-3)
		}
		return m, nil
	}
	if m.listKey(msg, &s.filter, &s.order, len(shardsOrders)) {
		return m, nil
	}
	if key.Matches(msg, k.Enter) {
		row, ok := s.selectedRow()
		if !ok {
			return m, nil
		}
		mem := m.cluster.member(row.node)
		if mem == nil {
			m.setStatus("member "+shortID(row.node)+" is not in the member list", true)
			return m, nil
		}
		s.drill = &drillState{node: row.node, typ: row.typ, loading: true}
		return m, m.regionCmd(mem, row.typ)
	}
	s.move(msg, k)
	return m, nil
}

func (m Model) quit() (tea.Model, tea.Cmd) {
	if m.sub != nil {
		return m, tea.Batch(cancelCmd(m.sub), tea.Quit)
	}
	return m, tea.Quit
}

func (m *Model) setStatus(s string, bad bool) { m.status, m.statusBad, m.statusAt = s, bad, m.now }

// statusTTL is how long the status line shows an action's outcome.
const statusTTL = 10 * time.Second

// bodyHeight is the height between the tabs and the status line.
func (m Model) bodyHeight() int { return max(m.height-5, 1) }
