package membership

import (
	"testing"
	"time"
)

// TestJoinRefusalSaysWhy: a join refused for a setting stops the joiner with
// StopJoinRefused (its configuration is wrong: the daemon exits 2); one refused because the
// cluster downed this very incarnation stops it with StopDowned (restart it: exit 3).
func TestJoinRefusalSaysWhy(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	cfg := DefaultConfig()
	cfg.JoinChecks = map[string]string{"sharding.number-of-shards": "1000"}
	seed := New(cfg, Member{Node: "a", Incarnation: 1}, t0)
	seed.FormCluster(t0)
	seed.Ready()
	join := func(m *Node) *Stopped {
		m.JoinVia(t0, "a")
		for _, env := range m.Ready().Messages {
			if env.To == "a" {
				seed.Step(t0, m.self.Node, env.Msg)
			}
		}
		for _, env := range seed.Ready().Messages {
			if env.To == m.self.Node {
				m.Step(t0, "a", env.Msg)
			}
		}
		for _, ev := range m.Ready().Events {
			if s, ok := ev.(Stopped); ok {
				return &s
			}
		}
		return nil
	}
	odd := cfg
	odd.JoinChecks = map[string]string{"sharding.number-of-shards": "100"}
	if s := join(New(odd, Member{Node: "b", Incarnation: 1}, t0)); s == nil || s.Reason != StopJoinRefused {
		t.Fatalf("a different setting: %+v", s)
	}
	c := New(cfg, Member{Node: "c", Incarnation: 1}, t0)
	if s := join(c); s != nil {
		t.Fatalf("c refused: %+v", s)
	}
	if !seed.Down(t0, "c") {
		t.Fatal("c not downed")
	}
	if s := join(New(cfg, Member{Node: "c", Incarnation: 1}, t0)); s == nil || s.Reason != StopDowned {
		t.Fatalf("the downed incarnation joining again: %+v", s)
	}
}
