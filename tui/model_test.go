package tui

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/ansi"
	"github.com/muesli/termenv"

	"github.com/shardmesh/shardmesh/admin/adminpb"
)

func asciiRenderer() *lipgloss.Renderer {
	r := lipgloss.NewRenderer(io.Discard)
	r.SetColorProfile(termenv.Ascii)
	return r
}

func testConfig(connect func(context.Context) (Source, error)) Config {
	return Config{
		Target:      "/ip4/127.0.0.1/tcp/4001/p2p/" + nodeA,
		Connect:     connect,
		Refresh:     time.Hour, // no tick fires during a test
		CallTimeout: time.Second,
		Now:         func() time.Time { return t0 },
		Location:    time.UTC,
		Renderer:    asciiRenderer(),
	}
}

func newModel(t testing.TB, cfg Config) Model {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	m, err := New(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// update applies msg and carries out the commands it returns, as bubbletea would, feeding
// their messages back. A command that does not answer within a moment (a tick, a wait for
// events that do not come) is left alone.
func update(t testing.TB, m Model, msg tea.Msg) Model {
	t.Helper()
	next, cmd := m.Update(msg)
	m = next.(Model)
	return settle(t, m, cmd)
}

func settle(t testing.TB, m Model, cmd tea.Cmd) Model {
	t.Helper()
	if cmd == nil {
		return m
	}
	out := make(chan tea.Msg, 1)
	go func() { out <- cmd() }()
	var msg tea.Msg
	select {
	case msg = <-out:
	case <-time.After(100 * time.Millisecond):
		return m
	}
	switch msg := msg.(type) {
	case nil:
		return m
	case tea.BatchMsg:
		for _, c := range msg {
			m = settle(t, m, c)
		}
		return m
	case tea.QuitMsg:
		return m
	}
	return update(t, m, msg)
}

func keyMsg(s string) tea.KeyMsg {
	switch s {
	case "enter":
		return tea.KeyMsg{Type: tea.KeyEnter}
	case "esc":
		return tea.KeyMsg{Type: tea.KeyEsc}
	case "down":
		return tea.KeyMsg{Type: tea.KeyDown}
	case "up":
		return tea.KeyMsg{Type: tea.KeyUp}
	case "tab":
		return tea.KeyMsg{Type: tea.KeyTab}
	case "ctrl+c":
		return tea.KeyMsg{Type: tea.KeyCtrlC}
	case "backspace":
		return tea.KeyMsg{Type: tea.KeyBackspace}
	}
	return tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune(s)}
}

func press(t testing.TB, m Model, keys ...string) Model {
	t.Helper()
	for _, k := range keys {
		m = update(t, m, keyMsg(k))
	}
	return m
}

// connected is a model at w×h that has reached the fake cluster and heard its answers.
func connected(t testing.TB, f *fakeSource, w, h int) Model {
	t.Helper()
	return connectedAt(t, f, w, h, nil)
}

// connectedAt is connected with the clock now (nil: fixed at t0).
func connectedAt(t testing.TB, f *fakeSource, w, h int, now func() time.Time) Model {
	t.Helper()
	cfg := testConfig(func(context.Context) (Source, error) { return f, nil })
	if now != nil {
		cfg.Now = now
	}
	m := newModel(t, cfg)
	m = update(t, m, tea.WindowSizeMsg{Width: w, Height: h})
	m = settle(t, m, m.Init())
	if m.conn != connUp || m.cluster.resp == nil || m.shards.at.IsZero() {
		t.Fatalf("not connected: conn %v, members %v, stats %v", m.conn, m.cluster.resp != nil, m.shards.at)
	}
	waitFor(t, func() bool { m = drainEvents(t, m); return m.events.total >= uint64(len(f.events)) })
	return m
}

// drainEvents applies the events the subscription holds.
func drainEvents(t testing.TB, m Model) Model {
	t.Helper()
	if m.sub == nil {
		return m
	}
	return settle(t, m, m.waitEventsCmd(m.sub))
}

// waitFor polls cond (events that goroutines deliver) until it holds. The bound is only a
// guard against a hang: a loaded machine may take seconds to run those goroutines.
func waitFor(t testing.TB, cond func() bool) {
	t.Helper()
	for end := time.Now().Add(60 * time.Second); time.Now().Before(end); time.Sleep(time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatal("condition not met within 60s")
}

// checkFrame checks that the screen is exactly w×h cells at most: h lines, none wider than w.
func checkFrame(t *testing.T, v string, w, h int) {
	t.Helper()
	lines := strings.Split(v, "\n")
	if len(lines) != h {
		t.Errorf("%d lines, want %d:\n%s", len(lines), h, v)
	}
	for i, l := range lines {
		if n := ansi.StringWidth(l); n > w {
			t.Errorf("line %d is %d cells wide, more than %d: %q", i, n, w, l)
		}
	}
}

func TestUnreachableMemberShowsRetryScreen(t *testing.T) {
	tries := 0
	f := newFake()
	m := newModel(t, testConfig(func(context.Context) (Source, error) {
		if tries++; tries < 3 {
			return nil, errors.New("cannot reach /ip4/127.0.0.1/tcp/4001: connection refused")
		}
		return f, nil
	}))
	m = update(t, m, tea.WindowSizeMsg{Width: 80, Height: 24})
	m = settle(t, m, m.Init()) // the retry tick does not fire within the test
	v := m.View()
	checkFrame(t, v, 80, 24)
	for _, want := range []string{"Cannot reach the member.", "connection refused", "Trying again in 1s (try 2)", "r retry now", "q quit"} {
		if !strings.Contains(v, want) {
			t.Errorf("retry screen lacks %q:\n%s", want, v)
		}
	}
	// A late retry tick of an earlier try is dropped; r tries at once.
	m = update(t, m, retryConnectMsg{attempt: 7})
	if m.conn != connFailed {
		t.Fatalf("a stale retry changed the state to %v", m.conn)
	}
	m = press(t, m, "r")
	if m.conn != connFailed || !strings.Contains(m.View(), "try 3") {
		t.Fatalf("after r: conn %v\n%s", m.conn, m.View())
	}
	m = press(t, m, "r")
	if m.conn != connUp || !strings.Contains(m.View(), "3 members") {
		t.Fatalf("third try should connect: conn %v\n%s", m.conn, m.View())
	}
}

func TestClusterViewMarksUnansweredMembersStale(t *testing.T) {
	m := connected(t, newFake(), 120, 40)
	v := m.View()
	for _, want := range []string{"3 members", "leader …AAAA1111", "oldest leader coord:counter entry", "…CCCC3333  Up       NO", "STALE: no answer to stats", "…CCCC3333 did not answer stats: no answer within 3s", "handoffs in flight 1"} {
		if !strings.Contains(v, want) {
			t.Errorf("cluster view lacks %q:\n%s", want, v)
		}
	}
	// The entry member stops answering: the screen says since when, and keeps the last list.
	m = update(t, m, membersMsg{err: errors.New("no answer within --timeout"), at: t0.Add(12 * time.Second)})
	v = m.View()
	if !strings.Contains(v, "STALE 12s: no answer within --timeout") || !strings.Contains(v, "…BBBB2222") {
		t.Errorf("stale entry not marked:\n%s", v)
	}
}

func TestShardsViewDrillsIntoARegion(t *testing.T) {
	m := connected(t, newFake(), 80, 24)
	m = press(t, m, "2")
	v := m.View()
	for _, want := range []string{"counter  18 shards", "> …AAAA1111 C ███", "12 sh", "…CCCC3333   no answer", "3 shards there per the coordinator", "its shards unknown"} {
		if !strings.Contains(v, want) {
			t.Errorf("shards view lacks %q:\n%s", want, v)
		}
	}
	m = press(t, m, "down", "enter")
	v = m.View()
	for _, want := range []string{"region …BBBB2222 of counter", "3 shards  3 live entities", "user-3 user-13", "stopping"} {
		if !strings.Contains(v, want) {
			t.Errorf("region view lacks %q:\n%s", want, v)
		}
	}
	checkFrame(t, v, 80, 24)
	m = press(t, m, "esc")
	if m.shards.drill != nil || !strings.Contains(m.View(), "> …BBBB2222") {
		t.Errorf("esc should go back with the region still selected:\n%s", m.View())
	}
	// A region that does not answer says so.
	m = press(t, m, "up", "enter")
	if v := m.View(); !strings.Contains(v, "no answer: cannot reach member") {
		t.Errorf("unanswered region:\n%s", v)
	}
}

func TestHandoffsFollowTheWatchStream(t *testing.T) {
	f := newFake()
	f.handoffs = &adminpb.HandoffsResponse{Node: nodeA} // no details: the stream alone
	m := connected(t, f, 120, 40)
	m = press(t, m, "3")
	v := m.View()
	for _, want := range []string{
		"rebalance active",
		"begun 2, re-allocated 1, failed 0",
		"counter/7       …CCCC3333 4s      stopping entities        - rebalance",
		"counter/2        …AAAA1111  …BBBB2222  80ms     220ms    graceful-shutdown",
	} {
		if !strings.Contains(v, want) {
			t.Errorf("handoffs view lacks %q:\n%s", want, v)
		}
	}
	// The shard is re-allocated: it leaves the in-flight list.
	m.applyEvents(eventsMsg{sub: m.sub, at: t0, events: []*adminpb.WatchEvent{
		{AtUnixMs: t0.UnixMilli(), Kind: "handoff-completed", EntityType: "counter", Shard: "7", TookMs: 4000},
		{AtUnixMs: t0.UnixMilli() + 5, Kind: "shard-allocated", EntityType: "counter", Shard: "7", To: nodeA},
	}})
	if v := m.View(); !strings.Contains(v, "in flight (0)") || !strings.Contains(v, "counter/7        …CCCC3333  …AAAA1111  4s       4s") {
		t.Errorf("after re-allocation:\n%s", v)
	}
}

func TestEventWindowIsBoundedAndFiltered(t *testing.T) {
	cfg := testConfig(func(context.Context) (Source, error) { return newFake(), nil })
	cfg.EventWindow = 100
	m := newModel(t, cfg)
	m = update(t, m, tea.WindowSizeMsg{Width: 80, Height: 24})
	m = settle(t, m, m.Init())
	m = press(t, m, "4")
	for i := range 10000 {
		typ := "counter"
		if i%2 == 1 {
			typ = "echo"
		}
		m.applyEvents(eventsMsg{sub: m.sub, at: t0, events: []*adminpb.WatchEvent{{AtUnixMs: t0.UnixMilli(), Kind: "shard-allocated", EntityType: typ, Shard: fmt.Sprint(i), To: nodeB}}})
	}
	if len(m.events.buf) != 100 || cap(m.events.buf) != 100 {
		t.Fatalf("window holds %d (cap %d), want 100", len(m.events.buf), cap(m.events.buf))
	}
	v := m.View()
	checkFrame(t, v, 80, 24)
	if !strings.Contains(v, "shard=9999 ") || strings.Contains(v, "shard=9899 ") || !strings.Contains(v, "window 100/100 of 10008 seen") {
		t.Errorf("the newest events should show, the oldest be gone:\n%s", v)
	}
	m = press(t, m, "t") // counter only
	v = m.View()
	if !strings.Contains(v, "type counter") || strings.Contains(v, "type=echo") || !strings.Contains(v, "shard=9998 ") {
		t.Errorf("type filter:\n%s", v)
	}
	m = press(t, m, "/", "9", "9", "7", "enter")
	v = m.View()
	if !strings.Contains(v, `text "997"`) || !strings.Contains(v, "shard=9970 ") || strings.Contains(v, "shard=9998 ") {
		t.Errorf("text filter:\n%s", v)
	}
	m = press(t, m, "esc", "up", "up")
	if v := m.View(); !strings.Contains(v, "scrolled back 2") || strings.Contains(v, "shard=9999 ") || !strings.Contains(v, "shard=9997 ") {
		t.Errorf("scrolling back:\n%s", v)
	}
}

func TestShutdownAsksForConfirmation(t *testing.T) {
	f := newFake()
	m := connected(t, f, 80, 24)
	m = press(t, m, "down", "s")
	if v := m.View(); !strings.Contains(v, "Shut down …BBBB2222 gracefully (hand off its shards, then leave)? y/N") {
		t.Fatalf("no prompt:\n%s", v)
	}
	m = press(t, m, "n")
	if len(f.asked) != 0 || !strings.Contains(m.View(), "shutdown: cancelled") {
		t.Fatalf("declined, yet asked %v:\n%s", f.asked, m.View())
	}
	m = press(t, m, "s", "y")
	if len(f.asked) != 1 || f.asked[0] != "shutdown "+nodeB {
		t.Fatalf("asked %v, want a shutdown of B", f.asked)
	}
	if v := m.View(); !strings.Contains(v, "shutdown …BBBB2222 accepted") {
		t.Errorf("no outcome:\n%s", v)
	}
	// The member leaves: it disappears from the list.
	f.mu.Lock()
	f.members = &adminpb.MembersResponse{Self: nodeA, Members: []*adminpb.MemberInfo{f.members.Members[0], f.members.Members[2]}}
	f.mu.Unlock()
	m = press(t, m, "r")
	if v := m.View(); strings.Contains(v, "…BBBB2222  ") || !strings.Contains(v, "2 members") {
		t.Errorf("B still listed:\n%s", v)
	}
}

func TestNonAdminSeesActionsDisabled(t *testing.T) {
	f := newFake()
	f.adminErr = refused
	m := connected(t, f, 120, 40)
	m = press(t, m, "5")
	v := m.View()
	for _, want := range []string{"identity: not an admin", "not in this member's", "shutdown …AAAA1111", "disabled: this identity is not an admin", "drain …AAAA1111", "disabled: not supported by this daemon"} {
		if !strings.Contains(v, want) {
			t.Errorf("actions view lacks %q:\n%s", want, v)
		}
	}
	m = press(t, m, "s")
	if m.confirm != nil || len(f.asked) != 0 || !strings.Contains(m.View(), "shutdown disabled: this identity is not an admin") {
		t.Errorf("a disabled action was offered:\n%s", m.View())
	}
}

func TestRefusedActionTeachesNonAdmin(t *testing.T) {
	f := newFake()
	m := connected(t, f, 80, 24)
	if !m.admin.admin {
		t.Fatal("the fake's identity should start as an admin")
	}
	f.adminErr = refused // this member's --admin-allow differs
	m = press(t, m, "s", "y")
	if m.admin.admin || !m.admin.known || !strings.Contains(m.View(), "shutdown …AAAA1111 failed: refused") {
		t.Errorf("refusal not learnt: %+v\n%s", m.admin, m.View())
	}
}

func TestRebalancePauseAndUnsupportedStatus(t *testing.T) {
	f := newFake()
	m := connected(t, f, 80, 24)
	m = press(t, m, "3", "p")
	if !strings.Contains(m.View(), "Pause rebalancing cluster-wide? y/N") {
		t.Fatalf("no prompt:\n%s", m.View())
	}
	m = press(t, m, "y")
	if len(f.asked) != 1 || f.asked[0] != "pause true" {
		t.Errorf("asked %v", f.asked)
	}
	f.rebalance = ErrNotSupported
	m = update(t, m, rebalanceMsg{err: ErrNotSupported, at: t0})
	if v := m.View(); !strings.Contains(v, "rebalance unknown (not supported by this daemon)") {
		t.Errorf("unsupported status:\n%s", v)
	}
}

func TestEveryViewFitsAnyTerminalSize(t *testing.T) {
	m := connected(t, newFake(), 80, 24)
	for _, size := range [][2]int{{80, 24}, {120, 40}, {40, 12}, {200, 60}, {80, 24}} {
		m = update(t, m, tea.WindowSizeMsg{Width: size[0], Height: size[1]})
		for _, k := range []string{"1", "2", "3", "4", "5", "?", "?"} {
			m = press(t, m, k)
			checkFrame(t, m.View(), size[0], size[1])
		}
	}
}

func TestQuitEndsTheSubscription(t *testing.T) {
	m := connected(t, newFake(), 80, 24)
	sub := m.sub
	for _, k := range []string{"q", "ctrl+c"} {
		_, cmd := m.Update(keyMsg(k))
		if cmd == nil {
			t.Fatalf("%s: no command", k)
		}
		m2 := settle(t, m, cmd) // runs the cancel
		_ = m2
		select {
		case <-time.After(2 * time.Second):
			t.Fatalf("%s: the subscription was not ended", k)
		case _, ok := <-sub.ch:
			for ok {
				_, ok = <-sub.ch
			}
		}
	}
}

func TestLateAnswersAreDropped(t *testing.T) {
	m := connected(t, newFake(), 80, 24)
	old := &subscription{gen: m.watchGen - 1, ch: make(chan *adminpb.WatchEvent)}
	total := m.events.total
	m = update(t, m, eventsMsg{sub: old, events: []*adminpb.WatchEvent{{Kind: "member-up"}}, at: t0})
	if m.events.total != total {
		t.Error("an event of an ended subscription was applied")
	}
	m = update(t, m, regionMsg{node: nodeB, typ: "counter", at: t0})
	if m.shards.drill != nil {
		t.Error("a region answer opened a region")
	}
}

func TestNoColorRendersNoEscapes(t *testing.T) {
	m := connected(t, newFake(), 80, 24)
	for _, k := range []string{"1", "2", "3", "4", "5"} {
		m = press(t, m, k)
		if v := m.View(); strings.Contains(v, "\x1b") {
			t.Errorf("view %s has escape sequences with the ASCII profile: %q", k, v)
		}
	}
}

// brokenWatch is a fake whose event stream breaks once, then works.
type brokenWatch struct {
	*fakeSource
	mu    sync.Mutex
	calls int
}

func (b *brokenWatch) Watch(ctx context.Context, fn func(*adminpb.WatchEvent)) error {
	b.mu.Lock()
	b.calls++
	first := b.calls == 1
	b.mu.Unlock()
	if first {
		return errors.New("the member stopped (left): watch through another member")
	}
	return b.fakeSource.Watch(ctx, fn)
}

func TestBrokenEventStreamIsResubscribed(t *testing.T) {
	f := &brokenWatch{fakeSource: newFake()}
	m := newModel(t, testConfig(func(context.Context) (Source, error) { return f, nil }))
	m = update(t, m, tea.WindowSizeMsg{Width: 120, Height: 40})
	m = settle(t, m, m.Init())
	m = drainEvents(t, m)
	waitFor(t, func() bool { m = drainEvents(t, m); return m.watchErr != nil })
	if v := m.View(); !strings.Contains(v, "events: the member stopped (left)") {
		t.Fatalf("a broken stream is not shown:\n%s", v)
	}
	gen := m.watchGen
	m = update(t, m, watchRetryMsg{gen: gen - 1}) // a late retry of an older stream
	if m.watchGen != gen {
		t.Fatal("a stale retry subscribed again")
	}
	m = update(t, m, watchRetryMsg{gen: gen})
	waitFor(t, func() bool { m = drainEvents(t, m); return m.events.total >= uint64(len(f.events)) })
	if m.watchErr != nil || strings.Contains(m.View(), "events: the member stopped") {
		t.Errorf("still marked broken after resubscribing:\n%s", m.View())
	}
}

func TestHandoffsInFlightAreBounded(t *testing.T) {
	h := newHandoffTracker(10)
	for i := range maxInflight + 5000 {
		h.apply(&adminpb.WatchEvent{AtUnixMs: int64(i), Kind: "handoff-started", EntityType: "counter", Shard: fmt.Sprint(i)})
	}
	if len(h.inflight) != maxInflight {
		t.Fatalf("%d handoffs in flight, want the bound %d", len(h.inflight), maxInflight)
	}
	if h.inflight[handoffKey{"counter", "0"}] != nil || h.inflight[handoffKey{"counter", fmt.Sprint(maxInflight + 4999)}] == nil {
		t.Error("the oldest should go first")
	}
	for i := range 50 {
		h.apply(&adminpb.WatchEvent{AtUnixMs: int64(i), Kind: "handoff-failed", EntityType: "counter", Shard: fmt.Sprint(maxInflight + i)})
	}
	if r := h.recent(); len(r) != 10 || r[0].key.shard != fmt.Sprint(maxInflight+49) {
		t.Errorf("finished list: %d, newest %+v", len(r), r[0])
	}
}

func TestSlowHandoffIsMarked(t *testing.T) {
	f := newFake()
	f.handoffs = &adminpb.HandoffsResponse{Node: nodeA}
	m := connected(t, f, 120, 40)
	m = press(t, m, "3")
	if strings.Contains(m.View(), "SLOW") {
		t.Fatalf("a 5 s handoff marked:\n%s", m.View())
	}
	m = update(t, m, tickMsg{at: t0.Add(6 * time.Second)})
	if v := m.View(); !strings.Contains(v, "counter/7       …CCCC3333 10s") || !strings.Contains(v, "      SLOW\n") {
		t.Errorf("a 10.9 s handoff not marked:\n%s", v)
	}
}

func TestHandoffsViewShowsDetails(t *testing.T) {
	f := newFake()
	var clock atomic.Int64 // since t0
	m := connectedAt(t, f, 120, 40, func() time.Time { return t0.Add(time.Duration(clock.Load())) })
	if n := f.handoffCalls(); n != 0 {
		t.Fatalf("handoffs asked %d times before any tick or the Handoffs view", n)
	}
	m = press(t, m, "3") // opening the view asks at once
	if n := f.handoffCalls(); n != 1 {
		t.Fatalf("opening the Handoffs view asked %d times, want 1", n)
	}
	v := m.View()
	for _, want := range []string{
		"in flight (2)  details 12:00:00",
		"  TYPE/SHARD      FROM      ELAPSED PHASE             BUFFERED CAUSE",
		// The stream said "stopping"; the answer adds the buffered count and stragglers.
		"  counter/7       …CCCC3333 4s      stopping entities       12 rebalance\n" +
			"      held up by: entities user-7, user-17 (forced stop in 3s)\n",
		// A handoff the stream did not tell of, still waiting for a region to buffer.
		"  echo/1          …BBBB2222 300ms   begun                    3 rebalance\n" +
			"      held up by: regions …CCCC3333 (not buffering yet)\n",
	} {
		if !strings.Contains(v, want) {
			t.Errorf("handoffs view lacks %q:\n%s", want, v)
		}
	}
	// The Cluster view counts both.
	if v := press(t, m, "1").View(); !strings.Contains(v, "handoffs in flight 2") {
		t.Errorf("cluster view:\n%s", v)
	}

	// Two seconds on, the next answer: echo/1's regions all buffer, counter/7 has one
	// straggler left.
	f.mu.Lock()
	f.handoffs = &adminpb.HandoffsResponse{Node: nodeA, Handoffs: []*adminpb.HandoffInfo{
		{EntityType: "counter", Shard: "7", From: nodeC, Epoch: 1<<32 | 4, Phase: "stopping-entities", Cause: "rebalance", ElapsedMs: 6900,
			Buffered: 20, Stragglers: []string{"user-17"}, ForceStopInMs: 1000},
		{EntityType: "echo", Shard: "1", From: nodeB, Epoch: 1<<32 | 2, Phase: "begun", Cause: "rebalance", ElapsedMs: 2300, Buffered: 4},
	}}
	f.mu.Unlock()
	clock.Store(int64(2 * time.Second))
	m = update(t, m, tickMsg{at: t0.Add(2 * time.Second)})
	if n := f.handoffCalls(); n != 2 {
		t.Fatalf("the refresh asked %d times in all, want 2", n)
	}
	v = m.View()
	for _, want := range []string{
		"  counter/7       …CCCC3333 6s      stopping entities       20 rebalance\n" +
			"      held up by: entities user-17 (forced stop in 1s)\n",
		"  echo/1          …BBBB2222 2s      buffering                4 rebalance\n\n",
	} {
		if !strings.Contains(v, want) {
			t.Errorf("after the second answer, the view lacks %q:\n%s", want, v)
		}
	}

	// The stream says counter/7 ended: it goes at once, details and all.
	m.applyEvents(eventsMsg{sub: m.sub, at: t0.Add(2 * time.Second), events: []*adminpb.WatchEvent{
		{AtUnixMs: t0.Add(2 * time.Second).UnixMilli(), Kind: "handoff-completed", EntityType: "counter", Shard: "7", TookMs: 6000},
		{AtUnixMs: t0.Add(2 * time.Second).UnixMilli(), Kind: "shard-allocated", EntityType: "counter", Shard: "7", To: nodeA},
	}})
	if v := m.View(); !strings.Contains(v, "in flight (1)") || strings.Contains(v, "user-17") {
		t.Errorf("after counter/7 re-allocated:\n%s", v)
	}
}

func TestHandoffsAreAskedOnlyWhileInFlightOrShown(t *testing.T) {
	f := newFake()
	f.events = f.events[:1] // no handoff in the stream
	f.handoffs = &adminpb.HandoffsResponse{Node: nodeA}
	m := connected(t, f, 80, 24)
	m = update(t, m, tickMsg{at: t0.Add(2 * time.Second)})
	if n := f.handoffCalls(); n != 0 {
		t.Fatalf("an idle cluster was asked for handoffs %d times", n)
	}
	m = press(t, m, "3")
	m = update(t, m, tickMsg{at: t0.Add(4 * time.Second)})
	if n := f.handoffCalls(); n != 2 {
		t.Fatalf("with the Handoffs view open: %d asks, want 2", n)
	}
	m = press(t, m, "1")
	m = update(t, m, tickMsg{at: t0.Add(6 * time.Second)})
	if n := f.handoffCalls(); n != 2 {
		t.Fatalf("view closed, nothing in flight: %d asks, want still 2", n)
	}
	// A handoff starts: the next refresh asks, whatever the view.
	m.applyEvents(eventsMsg{sub: m.sub, at: t0.Add(6 * time.Second), events: []*adminpb.WatchEvent{
		{AtUnixMs: t0.Add(6 * time.Second).UnixMilli(), Kind: "handoff-started", EntityType: "counter", Shard: "1", From: nodeB, Cause: "drain"},
	}})
	m = update(t, m, tickMsg{at: t0.Add(8 * time.Second)})
	if n := f.handoffCalls(); n != 3 {
		t.Fatalf("a handoff in flight: %d asks, want 3", n)
	}
	// An ask still unanswered is not repeated before the call timeout.
	next, _ := m.Update(tickMsg{at: t0.Add(10 * time.Second)})
	m = next.(Model)
	seq := m.handoffsSeq
	next, _ = m.Update(tickMsg{at: t0.Add(10*time.Second + 500*time.Millisecond)})
	if m = next.(Model); m.handoffsSeq != seq {
		t.Errorf("asked again while the last ask is out (%d asks, want %d)", m.handoffsSeq, seq)
	}
	next, _ = m.Update(tickMsg{at: t0.Add(11 * time.Second)})
	if m = next.(Model); m.handoffsSeq != seq+1 {
		t.Errorf("not asked again after the call timeout (%d asks, want %d)", m.handoffsSeq, seq+1)
	}
}

func TestStaleHandoffsAnswersAreIgnored(t *testing.T) {
	f := newFake()
	m := connected(t, f, 120, 40)
	m = press(t, m, "3")
	// An ask goes out; before its answer arrives the stream says counter/7 was
	// re-allocated. The answer, taken before, still lists it: it must not come back.
	next, _ := m.Update(tickMsg{at: t0.Add(2 * time.Second)})
	m = next.(Model)
	seq := m.handoffsSeq
	m.applyEvents(eventsMsg{sub: m.sub, at: t0.Add(2 * time.Second), events: []*adminpb.WatchEvent{
		{AtUnixMs: t0.Add(2 * time.Second).UnixMilli(), Kind: "shard-allocated", EntityType: "counter", Shard: "7", To: nodeA},
	}})
	m = update(t, m, handoffsMsg{seq: seq, resp: f.handoffs, at: t0.Add(2 * time.Second)})
	if v := m.View(); !strings.Contains(v, "in flight (1)") || strings.Contains(v, "user-7") {
		t.Errorf("an answer older than the stream brought back an ended handoff:\n%s", v)
	}
	// A late answer to an older ask is dropped.
	m = update(t, m, handoffsMsg{seq: seq - 1, err: errors.New("old news"), at: t0.Add(3 * time.Second)})
	if v := m.View(); strings.Contains(v, "old news") || !strings.Contains(v, "echo/1") {
		t.Errorf("a stale answer was applied:\n%s", v)
	}
	if len(m.details.ended) != 0 {
		t.Errorf("ended handoffs kept after the answer: %v", m.details.ended)
	}
}

func TestHandoffsDetailsFailures(t *testing.T) {
	f := newFake()
	f.handoffs.Failed = []*adminpb.FailedMember{{Node: nodeC, Error: "no answer within 3s"}}
	m := connected(t, f, 120, 40)
	m = press(t, m, "3")
	if v := m.View(); !strings.Contains(v, "details 12:00:00, incomplete: …CCCC3333 did not answer") {
		t.Errorf("partial answer:\n%s", v)
	}
	f.mu.Lock()
	f.handErr = errors.New("cannot reach member " + nodeA)
	f.mu.Unlock()
	m = update(t, m, tickMsg{at: t0.Add(2 * time.Second)})
	v := m.View()
	if !strings.Contains(v, "details: cannot reach member") || strings.Contains(v, "echo/1") ||
		!strings.Contains(v, "counter/7       …CCCC3333 6s      stopping entities        - rebalance") {
		t.Errorf("failed ask: the stream's handoffs without details and the error expected:\n%s", v)
	}
}

func TestHandoffsDetailsAreBounded(t *testing.T) {
	f := newFake()
	resp := &adminpb.HandoffsResponse{Node: nodeA}
	many := make([]string, 1000)
	for i := range many {
		many[i] = fmt.Sprint("user-", i)
	}
	for i := range maxInflight + 500 {
		resp.Handoffs = append(resp.Handoffs, &adminpb.HandoffInfo{EntityType: "echo", Shard: fmt.Sprint(i), From: nodeB,
			Phase: "stopping-entities", ElapsedMs: uint64(20000 + i), Stragglers: many, ForceStopInMs: -500})
	}
	f.handoffs = resp
	m := connected(t, f, 80, 24)
	m = press(t, m, "3")
	if n := len(m.details.byKey); n != maxInflight {
		t.Errorf("%d handoff details kept, want the bound %d", n, maxInflight)
	}
	for _, x := range m.details.byKey {
		if len(x.stragglers) != maxNames || x.nStragglers != 1000 {
			t.Fatalf("stragglers kept: %d of %d", len(x.stragglers), x.nStragglers)
		}
		break
	}
	v := m.View()
	checkFrame(t, v, 80, 24)
	if !strings.Contains(v, "      SLOW · held up by: entities user-0 and 999 more (forced stop due now)\n") {
		t.Errorf("straggler list:\n%s", v)
	}
}

// TestClusterViewShowsTheMessageRate: the cluster-wide rate of messages handed to entities,
// from two stats answers; a member that restarted (its count went down) adds nothing.
func TestClusterViewShowsTheMessageRate(t *testing.T) {
	m := connected(t, newFake(), 120, 40)
	stats := func(a, b uint64) *adminpb.StatsResponse {
		return &adminpb.StatsResponse{Members: []*adminpb.LocalStatsResponse{
			{Node: nodeA, Status: "Up", MessagesDelivered: a}, {Node: nodeB, Status: "Up", MessagesDelivered: b}}}
	}
	m = update(t, m, statsMsg{resp: stats(100, 1000), at: t0.Add(10 * time.Second)})
	m = update(t, m, statsMsg{resp: stats(300, 5), at: t0.Add(12 * time.Second)}) // b restarted
	if v := m.View(); !strings.Contains(v, "messages 100/s") {
		t.Errorf("rate not shown as 100/s:\n%s", v)
	}
}
