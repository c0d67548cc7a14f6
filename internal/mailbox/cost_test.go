package mailbox

import (
	"context"
	"runtime"
	"sync"
	"testing"
)

// idleBudget is the most scheduler memory an idle mailbox may cost, in bytes.
const idleBudget = 150

// shared is one Handler for many mailboxes, so that the measured entity is the Mailbox alone.
type shared struct{ handled *sync.WaitGroup }

func (s shared) Receive(any)            { s.handled.Done() }
func (s shared) Failed(r any, _ []byte) { panic(r) }

// idleBytesPerMailbox creates n mailboxes, has each handle one message, waits until they are
// all idle again and returns the heap they hold, per mailbox. The slice that refers to them
// (a shard's map, in a runtime) is not counted.
func idleBytesPerMailbox(t testing.TB, n int) float64 {
	p, err := NewPool(Config{})
	if err != nil {
		t.Fatal(err)
	}
	g := newGroup[any](t, p, GroupConfig{})
	var handled sync.WaitGroup
	h := shared{&handled}
	ents := make([]*Mailbox[any], n)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	handled.Add(n)
	for i := range ents {
		m := &Mailbox[any]{}
		m.Init(g, h)
		if err := m.Enqueue(i); err != nil {
			t.Fatal(err)
		}
		ents[i] = m
	}
	handled.Wait()
	if err := p.Close(context.Background()); err != nil { // every turn has ended
		t.Fatal(err)
	}
	runtime.GC()
	runtime.GC() // the second empties the segment free list, whose use is over
	runtime.ReadMemStats(&after)
	for _, m := range ents {
		if m.Len() != 0 {
			t.Fatal("a mailbox still holds messages")
		}
	}
	runtime.KeepAlive(ents)
	return float64(int64(after.HeapAlloc)-int64(before.HeapAlloc)) / float64(n)
}

func TestIdleMailboxMemory(t *testing.T) {
	n := 1_000_000
	if testing.Short() {
		n = 100_000
	}
	per := idleBytesPerMailbox(t, n)
	t.Logf("%d idle mailboxes: %.1f bytes each", n, per)
	if per > idleBudget {
		t.Errorf("an idle mailbox costs %.1f bytes, budget %d", per, idleBudget)
	}
}

func BenchmarkIdleMailboxMemory(b *testing.B) {
	for range b.N {
		b.ReportMetric(idleBytesPerMailbox(b, 1_000_000), "bytes/mailbox")
	}
}

// TestSteadyStateAllocations: once warm, enqueueing and handling messages allocates nothing.
func TestSteadyStateAllocations(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector makes sync.Pool drop segments on purpose")
	}
	p := newPool(t, Config{Workers: 2})
	g := newGroup[int](t, p, GroupConfig{SegmentSize: 8})
	const perRun = 200
	c := &counter{want: perRun, reached: make(chan struct{})} // no window: no acks
	var m Mailbox[int]
	m.Init(g, c)
	burst := func() {
		c.n = 0
		for i := range perRun {
			if err := m.Enqueue(i); err != nil {
				t.Fatal(err)
			}
		}
		<-c.reached
	}
	burst() // warm the segment free list and the run queue
	// A GC in the middle may empty the free list once: allow one allocation per run of 200
	// messages, where a design that allocates per message would make 200.
	if avg := testing.AllocsPerRun(50, burst); avg > 1 {
		t.Errorf("%.2f allocations per %d messages, want ≤ 1", avg, perRun)
	}
}
