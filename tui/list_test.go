package tui

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"google.golang.org/protobuf/proto"

	"github.com/shardmesh/shardmesh/admin/adminpb"
)

// rowsOf returns the member or region rows of a view, top to bottom, by the suffixes of
// the members' ids.
func rowsOf(v string) []string {
	var out []string
	for _, l := range strings.Split(v, "\n") {
		for _, id := range []string{"AAAA1111", "BBBB2222", "CCCC3333"} {
			if (strings.HasPrefix(l, "> …"+id) || strings.HasPrefix(l, "  …"+id)) && !strings.Contains(l, "no answer: ") {
				out = append(out, id[:4])
			}
		}
	}
	return out
}

func TestClusterSortAndFilter(t *testing.T) {
	m := connected(t, newFake(), 120, 40)
	if got := strings.Join(rowsOf(m.View()), " "); got != "AAAA BBBB CCCC" || !strings.Contains(m.View(), "sorted by age") {
		t.Fatalf("by age: %s\n%s", got, m.View())
	}
	// o: by member, by status, by shards (A 15, B 9, C unknown), by entities.
	m = press(t, m, "o", "o", "o")
	if got := strings.Join(rowsOf(m.View()), " "); got != "AAAA BBBB CCCC" || !strings.Contains(m.View(), "sorted by shards") {
		t.Errorf("by shards: %s\n%s", got, m.View())
	}
	m = press(t, m, "/", "c", "c", "c")
	if !strings.Contains(m.View(), "filter: ccc▏ (enter to keep") {
		t.Errorf("no filter prompt while typing:\n%s", m.View())
	}
	m = press(t, m, "enter")
	if got := strings.Join(rowsOf(m.View()), " "); got != "CCCC" || !strings.Contains(m.View(), `filter: ccc (esc clears)`) {
		t.Errorf("filtered on ccc: %s\n%s", got, m.View())
	}
	if m.cluster.selected != nodeC {
		t.Errorf("the selection stayed on a member the filter hides: %s", m.cluster.selected)
	}
	m = press(t, m, "/", "x", "enter")
	if !strings.Contains(m.View(), `no member matches "cccx"`) {
		t.Errorf("nothing matches:\n%s", m.View())
	}
	m = press(t, m, "esc")
	if got := strings.Join(rowsOf(m.View()), " "); got != "AAAA BBBB CCCC" {
		t.Errorf("esc does not clear the filter: %s", got)
	}
	// The filter matches the version too: only C runs 1.3.9.
	m = press(t, m, "/", "1", ".", "3", "enter")
	if got := strings.Join(rowsOf(m.View()), " "); got != "CCCC" {
		t.Errorf("filter on a version: %s", got)
	}
}

func TestShardsSortAndFilter(t *testing.T) {
	f := newFake()
	f.stats.Members[1] = localStats(nodeB, false, map[string]int{"counter": 20, "echo": 1})
	m := connected(t, f, 120, 40)
	m = press(t, m, "2")
	if got := strings.Join(rowsOf(m.View()), " "); got != "AAAA BBBB AAAA BBBB" || !strings.Contains(m.View(), "sorted by member") {
		t.Fatalf("by member: %s\n%s", got, m.View())
	}
	m = press(t, m, "o") // by shards: counter B 20 > A 12; echo A 3 > B 1
	if got := strings.Join(rowsOf(m.View()), " "); got != "BBBB AAAA AAAA BBBB" {
		t.Errorf("by shards: %s\n%s", got, m.View())
	}
	if row, _ := m.shards.selectedRow(); row.node != nodeA || row.typ != "counter" {
		t.Errorf("the selection did not follow its region: %+v", row)
	}
	m = press(t, m, "/", "e", "c", "h", "o", "enter") // a type's name: all its regions
	v := m.View()
	if got := strings.Join(rowsOf(v), " "); got != "AAAA BBBB" || strings.Contains(v, "counter  ") {
		t.Errorf("filter on echo: %s\n%s", got, v)
	}
	m = press(t, m, "esc", "/", "b", "b", "b", "b", "enter") // a member: its regions of every type
	if got := strings.Join(rowsOf(m.View()), " "); got != "BBBB BBBB" {
		t.Errorf("filter on a member: %s\n%s", got, m.View())
	}
	m = press(t, m, "enter") // opens the selected (filtered) region
	if m.shards.drill == nil || m.shards.drill.node != nodeB {
		t.Errorf("enter did not open B's region: %+v", m.shards.drill)
	}
}

func TestFullHelpListsEachKeyOnce(t *testing.T) {
	m := connected(t, newFake(), 200, 60)
	for _, view := range []string{"1", "2", "3", "4", "5"} {
		m = press(t, m, view, "?")
		v := m.View()
		for _, k := range []string{"↑/k", "↓/j", "next view", "more keys", "quit"} {
			if n := strings.Count(v, k); n != 1 {
				t.Errorf("view %s: %q listed %d times in the full help:\n%s", view, k, n, v)
			}
		}
		m = press(t, m, "?")
	}
}

func TestStatusLineExpires(t *testing.T) {
	m := connected(t, newFake(), 80, 24)
	m = press(t, m, "s", "n")
	if !strings.Contains(m.View(), "shutdown: cancelled") {
		t.Fatalf("no status:\n%s", m.View())
	}
	m = update(t, m, tickMsg{at: t0.Add(9 * time.Second)})
	if !strings.Contains(m.View(), "shutdown: cancelled") {
		t.Errorf("the status went before 10 s")
	}
	m = update(t, m, tickMsg{at: t0.Add(11 * time.Second)})
	if strings.Contains(m.View(), "shutdown: cancelled") {
		t.Errorf("the status is still there after 11 s:\n%s", m.View())
	}
}

func TestAgeRestartsWithANewIncarnation(t *testing.T) {
	f := newFake()
	m := connected(t, f, 120, 40)
	resp := proto.Clone(f.members).(*adminpb.MembersResponse)
	resp.Members[1].Incarnation = 2 // B restarted
	f.mu.Lock()
	f.members = resp // what the next refreshes answer too
	f.mu.Unlock()
	m = update(t, m, membersMsg{resp: resp, at: t0.Add(time.Minute)})
	m = update(t, m, tickMsg{at: t0.Add(time.Minute + 5*time.Second)})
	v := m.View()
	if a := lineOf(v, "> …AAAA1111"); !strings.Contains(a, "≥1m05s") {
		t.Errorf("A's age: %q", a)
	}
	if b := lineOf(v, "  …BBBB2222"); !strings.Contains(b, " 5s ") || strings.Contains(b, "≥") {
		t.Errorf("B restarted a minute in: its age should count from then, without ≥: %q", b)
	}
}

func TestActionsShowPauseOrResumeByState(t *testing.T) {
	m := connected(t, newFake(), 120, 40)
	m = press(t, m, "5")
	if v := m.View(); !strings.Contains(lineOf(v, "pause rebalance"), "ready") || !strings.Contains(lineOf(v, "resume rebalance"), "disabled: rebalancing is not paused") {
		t.Errorf("active rebalancing:\n%s", v)
	}
	m = update(t, m, rebalanceMsg{paused: true, at: t0})
	if v := m.View(); !strings.Contains(lineOf(v, "pause rebalance"), "disabled: rebalancing is paused already") || !strings.Contains(lineOf(v, "resume rebalance"), "ready") {
		t.Errorf("paused rebalancing:\n%s", v)
	}
}

func TestConfigurationErrorStopsRetrying(t *testing.T) {
	calls := 0
	m := newModel(t, testConfig(func(context.Context) (Source, error) {
		calls++
		return nil, Permanent(errors.New("the member at /ip4/… refused the connection: check --cluster-key"))
	}))
	m = update(t, m, tea.WindowSizeMsg{Width: 100, Height: 24})
	next, cmd := m.Update(m.Init()())
	m = next.(Model)
	if cmd != nil {
		t.Errorf("a configuration error schedules a retry")
	}
	if m.conn != connStopped || !strings.Contains(m.View(), "a configuration error") || !strings.Contains(m.View(), "check --cluster-key") {
		t.Errorf("conn %v:\n%s", m.conn, m.View())
	}
	m = press(t, m, "r") // the operator may still try again
	if calls != 2 {
		t.Errorf("r did not try again: %d connects", calls)
	}
}

// lineOf returns the first line of v containing s.
func lineOf(v, s string) string {
	for _, l := range strings.Split(v, "\n") {
		if strings.Contains(l, s) {
			return l
		}
	}
	return ""
}
