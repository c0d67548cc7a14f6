package mailbox

import (
	"context"
	"errors"
	"runtime"
	"slices"
	"testing"
)

func TestConfigValidate(t *testing.T) {
	c := DefaultConfig()
	if c.Workers != 2*runtime.GOMAXPROCS(0) || c.Throughput != 32 || c.OnPanic == nil || c.Logger == nil {
		t.Errorf("DefaultConfig() = %+v", c)
	}
	for _, bad := range []Config{{Workers: -1}, {Throughput: -1}} {
		if err := bad.Validate(); err == nil {
			t.Errorf("%+v.Validate() accepted a negative value", bad)
		}
	}
	if _, err := NewPool(Config{Workers: -1}); err == nil {
		t.Error("NewPool accepted Workers -1")
	}
	if _, err := NewGroup[int](nil, GroupConfig{Capacity: -1}); err == nil {
		t.Error("NewGroup accepted Capacity -1")
	}
}

// TestPoolCloseWaitsForHandlers: Close waits for a handler in progress and reports a
// deadline it could not meet; mailboxes that were waiting keep their messages.
func TestPoolCloseWaitsForHandlers(t *testing.T) {
	p, err := NewPool(Config{Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	g := newGroup[int](t, p, GroupConfig{})
	gt := newGate()
	var busy, waiting Mailbox[int]
	busy.Init(g, funcs[int]{t: t, receive: func(int) { gt.wait() }})
	waiting.Init(g, funcs[int]{t: t, receive: func(v int) { t.Errorf("stopped pool handled %d", v) }})
	mustEnqueue(t, &busy, 0)
	<-gt.reached
	mustEnqueue(t, &waiting, 1, 2)

	expired, cancel := context.WithCancel(context.Background())
	cancel()
	if err := p.Close(expired); !errors.Is(err, context.Canceled) {
		t.Errorf("Close with a handler still running = %v, want context.Canceled", err)
	}
	if err := waiting.Enqueue(3); !errors.Is(err, ErrStopped) {
		t.Errorf("Enqueue after Pool.Close = %v, want ErrStopped", err)
	}
	if err := waiting.Do(func() {}); !errors.Is(err, ErrStopped) {
		t.Errorf("Do after Pool.Close = %v, want ErrStopped", err)
	}
	close(gt.open)
	if err := p.Close(context.Background()); err != nil {
		t.Errorf("Close after the handler returned = %v", err)
	}
	if err := p.Close(expired); err != nil {
		t.Errorf("Close of a stopped pool = %v, want nil", err)
	}
	if rest := waiting.Close(nil); !slices.Equal(rest, []int{1, 2}) {
		t.Errorf("messages left in a mailbox of a stopped pool: %v, want [1 2]", rest)
	}
}

// TestThroughputFairness: with one worker and Throughput 4, a mailbox with a long queue
// yields after 4 messages to a mailbox scheduled behind it.
func TestThroughputFairness(t *testing.T) {
	const throughput = 4
	p := newPool(t, Config{Workers: 1, Throughput: throughput})
	g := newGroup[int](t, p, GroupConfig{})
	gt := newGate()
	var hot, cold1, cold2 Mailbox[int]
	hotDone := 0 // touched by the single worker only
	seen := make(chan int, 2)
	hot.Init(g, funcs[int]{t: t, receive: func(v int) {
		if v == 0 {
			gt.wait()
		}
		hotDone++
	}})
	cold := funcs[int]{t: t, receive: func(int) { seen <- hotDone }}
	cold1.Init(g, cold)
	cold2.Init(g, cold)
	mustEnqueue(t, &hot, 0)
	<-gt.reached
	for i := 1; i < 1000; i++ {
		mustEnqueue(t, &hot, i)
	}
	mustEnqueue(t, &cold1, 0)
	mustEnqueue(t, &cold2, 0)
	close(gt.open)
	for range 2 {
		if n := <-seen; n != throughput {
			t.Errorf("a cold mailbox ran after %d messages of the hot one, want %d", n, throughput)
		}
	}
}
