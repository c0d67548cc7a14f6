package mailbox

import (
	"math/rand/v2"
	"runtime"
	"sync"
	"testing"
)

// Every benchmark here has a baseline sub-benchmark measured in the same run: a buffered
// channel, or a goroutine per entity, the design this package replaces. One op is one
// message, produced and handled.

// mallocs starts counting heap allocations; the function it returns reports them per
// message as mallocs/msg, which -benchmem's allocs/op rounds down to an integer.
func mallocs(b *testing.B) (report func()) {
	b.StopTimer()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	before := ms.Mallocs
	b.StartTimer()
	return func() {
		b.StopTimer()
		runtime.ReadMemStats(&ms)
		b.ReportMetric(float64(ms.Mallocs-before)/float64(b.N), "mallocs/msg")
	}
}

// counter is a Handler that counts messages, sends to acks after every window of them, and
// to reached after want of them.
type counter struct {
	n, want int
	window  int
	acks    chan struct{}
	reached chan struct{}
}

func (c *counter) Receive(int) {
	c.n++
	if c.window > 0 && c.n%c.window == 0 {
		c.acks <- struct{}{}
	}
	if c.n == c.want {
		c.reached <- struct{}{}
	}
}

func (c *counter) Failed(r any, _ []byte) { panic(r) }

// window is how many messages the one-producer benchmarks let be in flight, twice over: the
// producer waits for the handler's acknowledgement of window k before it sends window k+2,
// as a network reader with flow control would. Without it the producer outruns the handler
// and the benchmark measures a queue growing to millions of messages.
const window = 1024

// paced sends b.N messages through send, at most 2 × window ahead of the handler c.
func paced(b *testing.B, c *counter, send func(int)) {
	for i := range b.N {
		if i%window == 0 && i >= 2*window {
			<-c.acks
		}
		send(i)
	}
	<-c.reached
}

func newCounter(b *testing.B) *counter {
	return &counter{want: b.N, window: window, acks: make(chan struct{}, b.N/window+1), reached: make(chan struct{})}
}

func BenchmarkOneProducerOneMailbox(b *testing.B) {
	b.Run("mailbox", func(b *testing.B) {
		p := newPool(b, Config{})
		g := newGroup[int](b, p, GroupConfig{})
		c := newCounter(b)
		var m Mailbox[int]
		m.Init(g, c)
		b.ReportAllocs()
		b.ResetTimer()
		report := mallocs(b)
		paced(b, c, func(i int) {
			if err := m.Enqueue(i); err != nil {
				b.Fatal(err)
			}
		})
		report()
	})
	b.Run("channel", func(b *testing.B) {
		ch := make(chan int, 2*window) // room for what the pacing lets be in flight
		c := newCounter(b)
		go func() {
			for v := range ch {
				c.Receive(v)
			}
		}()
		b.ReportAllocs()
		b.ResetTimer()
		paced(b, c, func(i int) { ch <- i })
		b.StopTimer()
		close(ch)
	})
}

// targets returns a fixed sequence of mailbox indexes in [0, n), uniform or Zipf (s = 1.1:
// the hottest mailbox gets about 10% of the messages), for one producer.
func targets(seed uint64, n int, zipf bool) []int32 {
	r := rand.New(rand.NewPCG(seed, 1))
	z := rand.NewZipf(r, 1.1, 1, uint64(n-1))
	seq := make([]int32, 1<<16)
	for i := range seq {
		if zipf {
			seq[i] = int32(z.Uint64())
		} else {
			seq[i] = int32(r.IntN(n))
		}
	}
	return seq
}

// warmMessages is how many messages fanIn sends before the timer starts, so that the
// segment free list is stocked and what is measured is the steady state.
const warmMessages = 1 << 18

// fanIn runs b.N messages (after warmMessages untimed ones) from parallel producers
// (4 × GOMAXPROCS goroutines) to n destinations: send(dst) sends one message to dst; flush
// waits until all were handled.
func fanIn(b *testing.B, n int, zipf bool, send func(dst int32), flush func()) {
	producers := 4 * runtime.GOMAXPROCS(0)
	var warm sync.WaitGroup
	for prod := range producers {
		warm.Go(func() {
			seq := targets(uint64(1000+prod), n, zipf)
			for i := range warmMessages / producers {
				send(seq[i&(len(seq)-1)])
			}
		})
	}
	warm.Wait()
	flush()

	var seed uint64
	var mu sync.Mutex
	b.SetParallelism(4)
	b.ReportAllocs()
	b.ResetTimer()
	report := mallocs(b)
	b.RunParallel(func(pb *testing.PB) {
		mu.Lock()
		seed++
		seq := targets(seed, n, zipf)
		mu.Unlock()
		for i := 0; pb.Next(); i++ {
			send(seq[i&(len(seq)-1)])
		}
	})
	flush()
	report()
}

// counted is an entity of the many-mailbox benchmarks: it counts messages, and a negative
// one (the flush marker, queued behind everything else) tells flushed.
type counted struct {
	mb      Mailbox[int]
	n       int
	flushed *sync.WaitGroup
}

func (c *counted) Receive(v int) {
	if v < 0 {
		c.flushed.Done()
		return
	}
	c.n++
}

func (c *counted) Failed(r any, _ []byte) { panic(r) }

func BenchmarkManyProducers10kMailboxes(b *testing.B) {
	const n = 10_000
	for _, dist := range []string{"uniform", "zipf"} {
		zipf := dist == "zipf"
		b.Run(dist+"/mailbox", func(b *testing.B) {
			p := newPool(b, Config{})
			g := newGroup[int](b, p, GroupConfig{})
			var wg sync.WaitGroup
			ents := make([]*counted, n)
			for i := range ents {
				ents[i] = &counted{flushed: &wg}
				ents[i].mb.Init(g, ents[i])
			}
			fanIn(b, n, zipf,
				func(dst int32) {
					if err := ents[dst].mb.Enqueue(int(dst)); err != nil {
						b.Error(err)
					}
				},
				func() {
					wg.Add(n)
					for _, e := range ents {
						if err := e.mb.Enqueue(-1); err != nil {
							b.Fatal(err)
						}
					}
					wg.Wait()
				})
			b.StopTimer()
			total := 0
			for _, e := range ents {
				total += e.n
			}
			if want := b.N + warmMessages/(4*runtime.GOMAXPROCS(0))*(4*runtime.GOMAXPROCS(0)); total != want {
				b.Fatalf("handled %d messages, want %d", total, want)
			}
		})
		b.Run(dist+"/goroutine-per-entity", func(b *testing.B) {
			chans := make([]chan int, n)
			var wg sync.WaitGroup
			for i := range chans {
				chans[i] = make(chan int, 32)
				go func(ch chan int) {
					for v := range ch {
						if v < 0 {
							wg.Done()
						}
					}
				}(chans[i])
			}
			fanIn(b, n, zipf,
				func(dst int32) { chans[dst] <- int(dst) },
				func() {
					wg.Add(n)
					for _, ch := range chans {
						ch <- -1
					}
					wg.Wait()
				})
			b.StopTimer()
			for _, ch := range chans {
				close(ch)
			}
		})
	}
}

// BenchmarkEnqueueToIdle measures what an Enqueue costs the producer when the mailbox is
// idle and must be scheduled (mailbox lock, a segment from the free list, the run-queue
// lock and push), on a pool without workers so that every Enqueue finds its mailbox idle;
// waking a sleeping worker is the Go runtime's cost and equal to a channel's. The baseline
// sends on a buffered channel without a receiver waiting.
func BenchmarkEnqueueToIdle(b *testing.B) {
	const batch = 4096
	b.Run("mailbox", func(b *testing.B) {
		p := &Pool{throughput: 32, exited: make(chan struct{})} // no workers
		p.wake.L = &p.mu
		g := newGroup[int](b, p, GroupConfig{})
		ents := make([]counted, batch)
		for i := range ents {
			ents[i].mb.Init(g, &ents[i])
		}
		b.ReportAllocs()
		b.ResetTimer()
		report := mallocs(b)
		defer report()
		for i := 0; i < b.N; i += batch {
			k := min(batch, b.N-i)
			for j := range k {
				if err := ents[j].mb.Enqueue(j); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			for j := range k { // what a worker would do: run the turn to the end
				if more, _ := ents[j].mb.run(1); more {
					b.Fatal("turn of one message left work")
				}
			}
			clear(p.queue.ring) // keep the ring: its growth is not what is measured
			p.queue.head, p.queue.n = 0, 0
			b.StartTimer()
		}
	})
	b.Run("channel", func(b *testing.B) {
		ch := make(chan int, batch)
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i += batch {
			k := min(batch, b.N-i)
			for j := range k {
				ch <- j
			}
			b.StopTimer()
			for range k {
				<-ch
			}
			b.StartTimer()
		}
	})
}

// BenchmarkRoundRobinIdle sends each message to the next of 16,384 mailboxes, so that nearly
// every message finds its mailbox idle: the schedule and wake-up costs on every message,
// end to end. The baseline sends to 16,384 goroutines, each parked on its own channel.
func BenchmarkRoundRobinIdle(b *testing.B) {
	const n = 1 << 14
	b.Run("mailbox", func(b *testing.B) {
		p := newPool(b, Config{})
		g := newGroup[int](b, p, GroupConfig{})
		var wg sync.WaitGroup
		ents := make([]counted, n)
		for i := range ents {
			ents[i].flushed = &wg
			ents[i].mb.Init(g, &ents[i])
		}
		b.ReportAllocs()
		b.ResetTimer()
		report := mallocs(b)
		for i := range b.N {
			if err := ents[i&(n-1)].mb.Enqueue(i); err != nil {
				b.Fatal(err)
			}
		}
		wg.Add(n)
		for i := range ents {
			if err := ents[i].mb.Enqueue(-1); err != nil {
				b.Fatal(err)
			}
		}
		wg.Wait()
		report()
	})
	b.Run("goroutine-per-entity", func(b *testing.B) {
		chans := make([]chan int, n)
		var wg sync.WaitGroup
		for i := range chans {
			chans[i] = make(chan int, 32)
			go func(ch chan int) {
				for v := range ch {
					if v < 0 {
						wg.Done()
					}
				}
			}(chans[i])
		}
		b.ReportAllocs()
		b.ResetTimer()
		for i := range b.N {
			chans[i&(n-1)] <- i
		}
		wg.Add(n)
		for _, ch := range chans {
			ch <- -1
		}
		wg.Wait()
		b.StopTimer()
		for _, ch := range chans {
			close(ch)
		}
	})
}
