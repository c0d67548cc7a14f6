package shardmesh_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/shardmesh/shardmesh"
)

// ring is what an alarm entity recorded of a reminder's or a timer's message.
type ring struct {
	msg, node, reminder, timer string
	scheduled, fired           time.Time
}

// alarms is an entity type for the tests of reminders and timers: "remind NAME D" registers
// a one-shot reminder whose message is "ring NAME"; "every NAME D", a periodic one;
// "cancel NAME" cancels it; "remind-flaky NAME D" registers one whose message "flaky NAME"
// fails the first time it is handled; "list" answers the names; "timer KEY D" and "tick KEY D" start a
// single and a periodic timer, "stop-timer KEY" cancels one; "sleep" passivates the entity.
// Every "ring …" message goes to rings.
type alarms struct {
	mu     sync.Mutex
	rings  []ring
	failed map[string]bool // "flaky NAME" messages refused once
}

func (a *alarms) got() []ring {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]ring(nil), a.rings...)
}

func (a *alarms) entity() shardmesh.Entity[string, string] {
	return shardmesh.Entity[string, string]{
		Key: shardmesh.NewEntityTypeKey[string, string]("alarm"),
		New: func(*shardmesh.Context) shardmesh.Behavior[string, string] {
			return shardmesh.BehaviorFunc[string, string](a.receive)
		},
		MessageCodec: shardmesh.StringCodec{},
		ReplyCodec:   shardmesh.StringCodec{},
	}
}

func (a *alarms) receive(ctx *shardmesh.Context, msg string) (string, error) {
	c, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	f := strings.Fields(msg)
	d := func() time.Duration { v, _ := time.ParseDuration(f[2]); return v }
	switch f[0] {
	case "ring":
		r := ring{msg: msg, node: ctx.Node(), timer: ctx.TimerKey()}
		if fi := ctx.Firing(); fi != nil {
			r.reminder, r.scheduled, r.fired = fi.Name, fi.Scheduled, fi.Fired
		}
		a.mu.Lock()
		a.rings = append(a.rings, r)
		a.mu.Unlock()
	case "flaky":
		// Handled only the second time: the first firing fails and is fired again.
		r := ring{msg: msg, node: ctx.Node()}
		if fi := ctx.Firing(); fi != nil {
			r.reminder, r.scheduled, r.fired = fi.Name, fi.Scheduled, fi.Fired
		}
		a.mu.Lock()
		defer a.mu.Unlock()
		a.rings = append(a.rings, r)
		if !a.failed[f[1]] {
			if a.failed == nil {
				a.failed = map[string]bool{}
			}
			a.failed[f[1]] = true
			return "", fmt.Errorf("flaky %s: not this time", f[1])
		}
	case "remind-flaky":
		return "", ctx.RemindAfter(c, f[1], d(), "flaky "+f[1])
	case "remind":
		return "", ctx.RemindAfter(c, f[1], d(), "ring "+f[1])
	case "every":
		return "", ctx.RemindEvery(c, f[1], d(), d(), "ring "+f[1])
	case "cancel":
		return "", ctx.CancelReminder(c, f[1])
	case "list":
		rs, err := ctx.Reminders(c)
		var names []string
		for _, r := range rs {
			names = append(names, r.Name)
		}
		return strings.Join(names, ","), err
	case "timer":
		return "", ctx.StartSingleTimer(f[1], "ring "+f[1], d())
	case "tick":
		return "", ctx.StartTimerAtFixedRate(f[1], "ring "+f[1], d())
	case "stop-timer":
		ctx.CancelTimer(f[1])
	case "bad-timer":
		return "", ctx.StartSingleTimer(f[1], 42, time.Millisecond)
	case "sleep":
		ctx.Passivate()
	}
	return "", nil
}

func (a *alarms) count(msg string) int {
	n := 0
	for _, r := range a.got() {
		if r.msg == msg {
			n++
		}
	}
	return n
}

// TestReminders on real members (libp2p, Badger, the replicated store): a one-shot reminder
// fires once, with its scheduled and actual times, on an entity that passivated meanwhile;
// list and cancel; a periodic reminder fires again and again until cancelled; a reminder
// fires on the shard's new home after its member left.
func TestReminders(t *testing.T) {
	systems := startCluster(t, 3, nil)
	a := &alarms{}
	regions := make([]*shardmesh.Region[string, string], len(systems))
	for i, s := range systems {
		r, err := shardmesh.Init(s, a.entity())
		if err != nil {
			t.Fatal(err)
		}
		regions[i] = r
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	ask := func(i int, id, msg string) string {
		t.Helper()
		got, err := regions[i].EntityRefFor(id).Ask(ctx, msg)
		if err != nil {
			t.Fatalf("%s %s: %v", id, msg, err)
		}
		return got
	}

	// One-shot, on a passivated entity.
	registered := time.Now()
	ask(0, "a", "remind r1 500ms")
	ask(0, "a", "remind r2 1h")
	if got := ask(1, "a", "list"); got != "r1,r2" {
		t.Fatalf("list: %q, want r1,r2", got)
	}
	ask(0, "a", "cancel r2")
	ask(2, "a", "sleep")
	waitFor(t, "r1 fired", 20*time.Second, func() bool { return a.count("ring r1") > 0 })
	r := a.got()[0]
	if r.reminder != "r1" || r.scheduled.Before(registered.Add(500*time.Millisecond)) || r.fired.Before(r.scheduled) {
		t.Fatalf("firing %+v: want reminder r1 scheduled ≥ 500 ms after %v and fired after it", r, registered)
	}
	// A fired one-shot reminder is listed until its removal is stored.
	waitFor(t, "no reminder of a listed after the firing and the cancel", 10*time.Second, func() bool { return ask(1, "a", "list") == "" })

	// Periodic, until cancelled.
	ask(1, "b", "every p 200ms")
	waitFor(t, "p fired three times", 20*time.Second, func() bool { return a.count("ring p") >= 3 })
	ask(1, "b", "cancel p")
	n := a.count("ring p")
	ask(1, "b", "remind marker 600ms") // a later reminder of the same shard: once it fired, p would have too
	waitFor(t, "marker fired", 20*time.Second, func() bool { return a.count("ring marker") > 0 })
	if got := a.count("ring p"); got > n+1 {
		t.Fatalf("p fired %d times after its cancel (%d before): want at most one in flight", got-n, n)
	}

	// The home of c's shard leaves: the reminder fires on the new home. A leaving member
	// moves its store replicas off before it hands its shards off (node/departure.go: two
	// checks a second apart, and the moves), and stays the home, firing what is due, until
	// then: the reminder is due well after that.
	moved := time.Now()
	ask(0, "c", "remind moved 15s")
	var home int
	for i, s := range systems {
		if n, ok := whereIs(t, s, "alarm", "c"); ok && n == string(s.ID()) {
			home = i
		}
	}
	if err := systems[home].Leave(ctx); err != nil {
		t.Fatal(err)
	}
	left := time.Since(moved)
	waitFor(t, "moved fired", 30*time.Second, func() bool { return a.count("ring moved") > 0 })
	for _, r := range a.got() {
		if r.msg == "ring moved" && r.node == string(systems[home].ID()) {
			t.Fatalf("moved fired on %s, the member that left (its leave took %v of the reminder's 15 s)", r.node, left.Round(time.Millisecond))
		}
	}
}

// whereIs returns the member hosting entity id of typ as member s sees it.
func whereIs(t *testing.T, s *shardmesh.System, typ, id string) (string, bool) {
	t.Helper()
	states, err := s.Node().RegionState(context.Background(), typ)
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range states {
		for _, e := range st.Entities {
			if string(e) == id {
				return string(s.ID()), true
			}
		}
	}
	return "", false
}

// TestTimers: a single timer fires once, a periodic one until cancelled, a cancelled one
// not at all; a message of another type is refused; timers die with the incarnation.
func TestTimers(t *testing.T) {
	sys := startCluster(t, 1, nil)[0]
	a := &alarms{}
	r, err := shardmesh.Init(sys, a.entity())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ask := func(id, msg string) error {
		_, err := r.EntityRefFor(id).Ask(ctx, msg)
		return err
	}
	for _, m := range []string{"timer once 50ms", "tick rep 50ms", "timer never 300ms", "stop-timer never"} {
		if err := ask("t", m); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "rep ticked 4 times", 10*time.Second, func() bool { return a.count("ring rep") >= 4 })
	if err := ask("t", "stop-timer rep"); err != nil {
		t.Fatal(err)
	}
	stopped := a.count("ring rep")
	// A timer armed after: once it fired, a cancelled one due before it would have too.
	if err := ask("t", "timer after 400ms"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "after fired", 10*time.Second, func() bool { return a.count("ring after") == 1 })
	if a.count("ring once") != 1 || a.count("ring never") != 0 || a.count("ring rep") != stopped {
		t.Fatalf("once %d (want 1), never %d (want 0), rep %d after its cancel (want %d)", a.count("ring once"), a.count("ring never"), a.count("ring rep"), stopped)
	}
	if err := ask("t", "bad-timer x"); err == nil || !strings.Contains(err.Error(), "not the type's message type") {
		t.Fatalf("a timer with an int message: %v", err)
	}
	// Timers die with the incarnation: a periodic timer stops when the entity passivates.
	if err := ask("u", "tick gone 50ms"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "gone ticked", 10*time.Second, func() bool { return a.count("ring gone") >= 1 })
	if err := ask("u", "sleep"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "u passivated", 10*time.Second, func() bool { _, ok := whereIs(t, sys, "alarm", "u"); return !ok })
	before := a.count("ring gone")
	if err := ask("t", "timer later 300ms"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "later fired", 10*time.Second, func() bool { return a.count("ring later") == 1 })
	if got := a.count("ring gone"); got != before {
		t.Fatalf("gone ticked %d times after its incarnation ended", got-before)
	}
}

// TestMessageExtractorAndStartEntity: the entity id comes from the message (Akka's message
// extractor), an enveloped ask, and StartEntity starts an entity on its home (another member
// for some ids) without delivering a message, and answers once it runs.
func TestMessageExtractorAndStartEntity(t *testing.T) {
	systems := startCluster(t, 2, nil)
	var mu sync.Mutex
	started := map[string]int{}
	e := shardmesh.Entity[string, string]{
		Key: shardmesh.NewEntityTypeKey[string, string]("keyed"),
		New: func(ctx *shardmesh.Context) shardmesh.Behavior[string, string] {
			mu.Lock()
			started[ctx.EntityID()]++
			mu.Unlock()
			return shardmesh.BehaviorFunc[string, string](func(ctx *shardmesh.Context, msg string) (string, error) {
				return ctx.EntityID() + " got " + msg, nil
			})
		},
		MessageCodec:     shardmesh.StringCodec{},
		ReplyCodec:       shardmesh.StringCodec{},
		MessageExtractor: func(msg string) string { id, _, _ := strings.Cut(msg, ":"); return id },
	}
	regions := make([]*shardmesh.Region[string, string], len(systems))
	for i, s := range systems {
		r, err := shardmesh.Init(s, e)
		if err != nil {
			t.Fatal(err)
		}
		regions[i] = r
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if got, err := regions[0].AskMessage(ctx, "u7:hello"); err != nil || got != "u7 got u7:hello" {
		t.Fatalf("AskMessage: %q, %v", got, err)
	}
	if err := regions[1].TellMessage(":no id"); err == nil || !strings.Contains(err.Error(), "no entity id") {
		t.Fatalf("TellMessage without an id: %v", err)
	}
	if got, err := regions[1].Ask(ctx, shardmesh.ShardingEnvelope[string]{EntityID: "u8", Message: "hi"}); err != nil || got != "u8 got hi" {
		t.Fatalf("Ask(envelope): %q, %v", got, err)
	}
	remote := 0
	for i := range 20 {
		id := fmt.Sprintf("s%d", i)
		if err := regions[0].StartEntity(ctx, id); err != nil {
			t.Fatalf("StartEntity %s: %v", id, err)
		}
		var home string
		for _, s := range systems {
			if n, ok := whereIs(t, s, "keyed", id); ok {
				home = n
			}
		}
		if home == "" {
			t.Fatalf("%s does not run after StartEntity", id)
		}
		if home != string(systems[0].ID()) {
			remote++
		}
	}
	if err := regions[1].StartEntity(ctx, "s0"); err != nil { // running: left as it is
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	for i := range 20 {
		if n := started[fmt.Sprintf("s%d", i)]; n != 1 {
			t.Fatalf("s%d created %d times, want once", i, n)
		}
	}
	if remote == 0 {
		t.Fatal("every started entity is at home on the starting member: StartEntity across members is untested")
	}
}

// TestReminderMetrics: the metrics of reminders follow what happens, decided by events: a
// registered reminder is held; a firing whose message fails is fired again after the retry
// pause (1 s), so that second firing is at least 1 s after its scheduled time and counts as
// late; once handled and removed, nothing is held or due.
func TestReminderMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	sys := startMembersOpts(t, 1, nil, func(int) []shardmesh.Option { return []shardmesh.Option{shardmesh.WithMetrics(reg)} })[0]
	a := &alarms{}
	r, err := shardmesh.Init(sys, a.entity())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ask := func(id, msg string) {
		t.Helper()
		if _, err := r.EntityRefFor(id).Ask(ctx, msg); err != nil {
			t.Fatalf("%s %s: %v", id, msg, err)
		}
	}
	alarm := map[string]string{"type": "alarm"}
	value := func(name string) float64 { return metricValue(t, reg, name, alarm) }

	ask("m", "remind later 1h")
	if got := value("shardmesh_reminders"); got != 1 {
		t.Fatalf("shardmesh_reminders after a registration: %v, want 1", got)
	}
	ask("m", "remind-flaky f 100ms")
	waitFor(t, "f fired twice", 20*time.Second, func() bool { return a.count("flaky f") == 2 })
	ask("m", "cancel later")
	waitFor(t, "nothing held or due", 20*time.Second, func() bool {
		return value("shardmesh_reminders") == 0 && value("shardmesh_reminders_due") == 0
	})
	rings := a.got()
	if late := rings[1].fired.Sub(rings[1].scheduled); late < time.Second {
		t.Fatalf("the second firing was %v after its scheduled time: want at least the retry pause (1 s)", late)
	}
	fired, late, lateness := value("shardmesh_reminders_fired_total"), value("shardmesh_reminders_late_total"), value("shardmesh_reminder_lateness_seconds")
	if fired != 2 || lateness != 2 || late < 1 || late > 2 {
		t.Fatalf("fired %v (want 2), lateness observations %v (want 2), late %v (want the second firing, at least)", fired, lateness, late)
	}
}
