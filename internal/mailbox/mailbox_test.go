package mailbox

import (
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
)

func TestMessagesHandledInOrder(t *testing.T) {
	p := newPool(t, Config{Workers: 3, Throughput: 5})
	g := newGroup[int](t, p, GroupConfig{SegmentSize: 4})
	const n = 1000
	var got []int
	finished := make(chan struct{})
	var m Mailbox[int]
	m.Init(g, funcs[int]{t: t, receive: func(v int) {
		got = append(got, v)
		if len(got) == n {
			close(finished)
		}
	}})
	for i := range n {
		mustEnqueue(t, &m, i)
	}
	<-finished
	for i, v := range got {
		if v != i {
			t.Fatalf("message %d handled as number %d; order lost: %v", v, i, got[:i+1])
		}
	}
	if l := m.Len(); l != 0 {
		t.Errorf("Len after all handled = %d, want 0", l)
	}
}

// TestManyProducersManyMailboxes checks, under load, that a mailbox is never run by two
// workers at once, that each producer's messages to each mailbox keep their order, and that
// every message is handled exactly once.
func TestManyProducersManyMailboxes(t *testing.T) {
	const (
		producers = 8
		mailboxes = 64
		perProd   = 4000
	)
	p := newPool(t, Config{Workers: 6, Throughput: 7})
	g := newGroup[[2]int](t, p, GroupConfig{SegmentSize: 5})

	type entity struct {
		mb      Mailbox[[2]int]
		active  atomic.Int32
		lastSeq [producers]int // per producer; touched only by the entity's handler
		count   int
	}
	var handled sync.WaitGroup
	handled.Add(producers * perProd)
	ents := make([]*entity, mailboxes)
	for i := range ents {
		e := &entity{}
		for j := range e.lastSeq {
			e.lastSeq[j] = -1
		}
		e.mb.Init(g, funcs[[2]int]{t: t, receive: func(msg [2]int) {
			if n := e.active.Add(1); n != 1 {
				t.Errorf("mailbox %d run by %d workers at once", i, n)
			}
			prod, seq := msg[0], msg[1]
			if seq <= e.lastSeq[prod] {
				t.Errorf("mailbox %d: producer %d's message %d handled after %d", i, prod, seq, e.lastSeq[prod])
			}
			e.lastSeq[prod] = seq
			e.count++
			e.active.Add(-1)
			handled.Done()
		}})
		ents[i] = e
	}
	var wg sync.WaitGroup
	for prod := range producers {
		wg.Go(func() {
			for seq := range perProd {
				// A producer-specific stride so that producers collide on mailboxes in
				// different orders.
				e := ents[(seq*(2*prod+1)+prod)%mailboxes]
				if err := e.mb.Enqueue([2]int{prod, seq}); err != nil {
					t.Errorf("Enqueue: %v", err)
					handled.Done()
				}
			}
		})
	}
	wg.Wait()
	handled.Wait()
	total := 0
	for _, e := range ents {
		total += e.count
	}
	if total != producers*perProd {
		t.Errorf("handled %d messages, want %d", total, producers*perProd)
	}
}

func TestBoundedMailboxRefusesWhenFull(t *testing.T) {
	p := newPool(t, Config{Workers: 1})
	g := newGroup[int](t, p, GroupConfig{Capacity: 3})
	gt := newGate()
	var got []int
	var m Mailbox[int]
	m.Init(g, funcs[int]{t: t, receive: func(v int) {
		if v == 0 {
			gt.wait()
		}
		got = append(got, v)
	}})
	mustEnqueue(t, &m, 0)
	<-gt.reached // message 0 is being handled: it no longer counts against the capacity
	mustEnqueue(t, &m, 1, 2, 3)
	if err := m.Enqueue(4); !errors.Is(err, ErrFull) {
		t.Fatalf("Enqueue beyond Capacity = %v, want ErrFull", err)
	}
	if l := m.Len(); l != 3 {
		t.Errorf("Len = %d, want 3", l)
	}
	// Signals are not bounded: a stop must get through a full mailbox.
	stopped := make(chan []int)
	if err := m.Do(func() { stopped <- m.Close(nil) }); err != nil {
		t.Fatalf("Do on a full mailbox: %v", err)
	}
	close(gt.open)
	if rest := <-stopped; len(rest) != 0 {
		t.Errorf("Close in the stop signal returned %v, want nothing", rest)
	}
	if !slices.Equal(got, []int{0, 1, 2, 3}) {
		t.Errorf("handled %v, want [0 1 2 3]", got)
	}
}

func TestGroupConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		cfg     GroupConfig
		size    uintptr
		wantSeg int
		wantErr bool
	}{
		{cfg: GroupConfig{}, size: 16, wantSeg: 16},
		{cfg: GroupConfig{}, size: 1, wantSeg: 64},
		{cfg: GroupConfig{}, size: 0, wantSeg: 64},
		{cfg: GroupConfig{}, size: 1024, wantSeg: 4},
		{cfg: GroupConfig{SegmentSize: 3}, size: 16, wantSeg: 3},
		{cfg: GroupConfig{Capacity: -1}, size: 16, wantErr: true},
		{cfg: GroupConfig{SegmentSize: -1}, size: 16, wantErr: true},
		{cfg: GroupConfig{SegmentSize: maxSegment + 1}, size: 16, wantErr: true},
	} {
		cfg := tc.cfg
		err := cfg.Validate(tc.size)
		if (err != nil) != tc.wantErr {
			t.Errorf("%+v.Validate(%d) error = %v, want error %v", tc.cfg, tc.size, err, tc.wantErr)
			continue
		}
		if err == nil && cfg.SegmentSize != tc.wantSeg {
			t.Errorf("%+v.Validate(%d): SegmentSize %d, want %d", tc.cfg, tc.size, cfg.SegmentSize, tc.wantSeg)
		}
	}
}

func TestInitMisuse(t *testing.T) {
	p := newPool(t, Config{Workers: 1})
	g := newGroup[int](t, p, GroupConfig{})
	h := funcs[int]{t: t, receive: func(int) {}}
	mustPanic := func(name string, f func()) {
		t.Helper()
		defer func() {
			if recover() == nil {
				t.Errorf("%s did not panic", name)
			}
		}()
		f()
	}
	var m Mailbox[int]
	mustPanic("Enqueue before Init", func() { _ = m.Enqueue(1) })
	mustPanic("Do before Init", func() { _ = m.Do(func() {}) })
	mustPanic("Init with nil Group", func() { m.Init(nil, h) })
	mustPanic("Init with nil Handler", func() { m.Init(g, nil) })
	m.Init(g, h)
	mustPanic("second Init", func() { m.Init(g, h) })
}
