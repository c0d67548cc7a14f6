package shard

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func render(out []Output[string]) string {
	var lines []string
	for _, o := range out {
		switch o := o.(type) {
		case DeliverToEntity[string]:
			lines = append(lines, fmt.Sprintf("deliver %s %s", o.Entity, o.Msg))
		case StartEntity:
			lines = append(lines, fmt.Sprintf("start %s", o.Entity))
		case Bounce[string]:
			lines = append(lines, fmt.Sprintf("bounce %v", o.Msgs))
		default:
			lines = append(lines, fmt.Sprintf("%T%+v", o, o))
		}
	}
	return strings.Join(lines, "\n")
}

func TestEntityStartsOnFirstMessage(t *testing.T) {
	s := New[string](Config{}, "1")
	if d, _ := s.Deliver(t0, "e", "m1"); d != StartAndDeliver {
		t.Fatalf("first message: %v", d)
	}
	if d, _ := s.Deliver(t0, "e", "m2"); d != Deliver {
		t.Fatalf("second message: %v", d)
	}
}

// TestPassivationBuffersForTheNextIncarnation: messages that arrive after Passivate wait in
// the shard and start the next incarnation, in order.
func TestPassivationBuffersForTheNextIncarnation(t *testing.T) {
	s := New[string](Config{}, "1")
	s.Deliver(t0, "e", "m1")
	s.Ready()
	s.Passivate("e")
	if d, _ := s.Deliver(t0, "e", "m2"); d != Waiting {
		t.Fatalf("during passivation: %v", d)
	}
	s.Deliver(t0, "e", "m3")
	if got := render(s.Ready()); got != "shard.StopEntity{Entity:e}" {
		t.Fatalf("got:\n%s", got)
	}
	s.EntityStopped(t0, "e", nil)
	if got := render(s.Ready()); got != "start e\ndeliver e m2\ndeliver e m3" {
		t.Fatalf("got:\n%s", got)
	}
}

func TestHandoffStopsEntitiesAndBouncesWhatWaits(t *testing.T) {
	s := New[string](Config{HandoffTimeout: 10 * time.Second}, "1")
	s.Deliver(t0, "a", "m1")
	s.Deliver(t0, "b", "m2")
	s.Passivate("b")
	s.Deliver(t0, "b", "m3")
	s.Ready()
	s.Stop(t0)
	if got := render(s.Ready()); got != "shard.StopEntity{Entity:a}\nbounce [m3]" {
		t.Fatalf("got:\n%s", got)
	}
	if d, _ := s.Deliver(t0, "c", "late"); d != Bounced {
		t.Fatalf("a stopping shard accepted a message: %v", d)
	}
	s.EntityStopped(t0, "a", nil)
	if s.State() != StateDraining {
		t.Fatal("stopped with b still running")
	}
	// b ignores its stop message: forced after handoff-timeout − 5 s, its queue bounced.
	s.Tick(t0.Add(4 * time.Second))
	if got := render(s.Ready()); got != "" {
		t.Fatalf("forced too early:\n%s", got)
	}
	s.Tick(t0.Add(5 * time.Second))
	if got := render(s.Ready()); got != "shard.ForceStop{Entity:b}" {
		t.Fatalf("got:\n%s", got)
	}
	s.EntityStopped(t0, "b", []string{"queued"})
	if got := render(s.Ready()); got != "bounce [queued]\nshard.Stopped{Entities:2}" {
		t.Fatalf("got:\n%s", got)
	}
}

func TestForceStopAfter(t *testing.T) {
	for _, c := range []struct{ timeout, want time.Duration }{
		{60 * time.Second, 55 * time.Second}, {5 * time.Second, time.Second}, {0, 55 * time.Second},
	} {
		if got := (Config{HandoffTimeout: c.timeout}).ForceStopAfter(); got != c.want {
			t.Errorf("handoff-timeout %v: force after %v, want %v", c.timeout, got, c.want)
		}
	}
}
