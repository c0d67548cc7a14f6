package chaos

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/shardmesh/shardmesh/admin"
)

// counterState is what the driver knows of one counter.
type counterState struct {
	attempted int64            // increments sent (asks and tells), whether answered or not
	acked     int64            // asks answered with a value
	values    map[int64]string // acknowledged reply values, each with the member that answered
	dupes     []string         // a value answered twice
	reminders int64            // inc-after registrations answered: each fires at least once
}

// load drives increments at the counters through the live members' admin clients.
type load struct {
	c           *cluster
	ids         []string
	askTimeout  time.Duration
	tellShare   float64 // fraction of increments sent as tells
	remindShare float64 // fraction sent as inc-after (a durable reminder that increments)

	mu       sync.Mutex
	counters []counterState

	asks, askErrs, tells, tellErrs atomic.Int64
	reminders, reminderErrs        atomic.Int64
	hangs                          atomic.Int64 // asks that returned later than timeout + grace
	maxAsk                         atomic.Int64 // nanoseconds
	firstHang                      atomic.Value // string

	errMu     sync.Mutex
	errCounts map[string]int // error text (shortened) → count
}

// hangGrace is how much later than its timeout an ask may return before it counts as hung.
const hangGrace = time.Second

func newLoad(c *cluster, counters int, askTimeout time.Duration, tellShare, remindShare float64) *load {
	l := &load{c: c, askTimeout: askTimeout, tellShare: tellShare, remindShare: remindShare, counters: make([]counterState, counters), errCounts: map[string]int{}}
	for i := range counters {
		l.ids = append(l.ids, "c"+strconv.Itoa(i))
		l.counters[i].values = map[int64]string{}
	}
	return l
}

// run starts workers that increment random counters until stop is closed.
func (l *load) run(workers int, seed uint64, stop <-chan struct{}) *sync.WaitGroup {
	var wg sync.WaitGroup
	for w := range workers {
		rng := rand.New(rand.NewPCG(seed, uint64(w)+1))
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				live := l.c.liveMembers()
				// Paused members stay targets too: a client does not know a member is paused.
				for _, m := range l.c.members {
					if m.live() && m.isStopped() && rng.IntN(4) == 0 {
						live = append(live, m)
					}
				}
				if len(live) == 0 {
					time.Sleep(100 * time.Millisecond)
					continue
				}
				m := live[rng.IntN(len(live))]
				cl := m.adminClient()
				if cl == nil {
					time.Sleep(10 * time.Millisecond)
					continue
				}
				switch i, p := rng.IntN(len(l.ids)), rng.Float64(); {
				case p < l.remindShare:
					l.remind(cl, i, time.Duration(rng.IntN(2000))*time.Millisecond)
				default:
					l.one(cl, m.name, i, p < l.remindShare+l.tellShare)
				}
			}
		})
	}
	return &wg
}

// one sends one increment to counter i.
func (l *load) one(cl *admin.Client, via string, i int, tell bool) {
	l.mu.Lock()
	l.counters[i].attempted++
	l.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), l.askTimeout)
	defer cancel()
	if tell {
		l.tells.Add(1)
		if err := cl.Tell(ctx, "counter", l.ids[i], []byte("inc")); err != nil {
			l.tellErrs.Add(1)
			l.noteErr(err)
		}
		return
	}
	l.asks.Add(1)
	start := time.Now()
	reply, err := cl.Ask(ctx, "counter", l.ids[i], []byte("inc"))
	took := time.Since(start)
	for {
		old := l.maxAsk.Load()
		if int64(took) <= old || l.maxAsk.CompareAndSwap(old, int64(took)) {
			break
		}
	}
	if took > l.askTimeout+hangGrace {
		l.hangs.Add(1)
		l.firstHang.CompareAndSwap(nil, fmt.Sprintf("ask %s via %s took %v (timeout %v), err %v", l.ids[i], via, took, l.askTimeout, err))
	}
	if err != nil {
		l.askErrs.Add(1)
		l.noteErr(err)
		return
	}
	v, perr := strconv.ParseInt(string(reply), 10, 64)
	if perr != nil {
		l.askErrs.Add(1)
		l.noteErr(fmt.Errorf("reply %q is not a number", reply))
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	cs := &l.counters[i]
	cs.acked++
	if prev, dup := cs.values[v]; dup {
		cs.dupes = append(cs.dupes, fmt.Sprintf("value %d answered via %s and via %s", v, prev, via))
	}
	cs.values[v] = via
}

// remind asks counter i to increment itself after d (inc-after: a durable reminder). An
// answered registration must fire at least once; an unanswered one may or may not.
func (l *load) remind(cl *admin.Client, i int, d time.Duration) {
	l.mu.Lock()
	l.counters[i].attempted++
	l.mu.Unlock()
	l.reminders.Add(1)
	ctx, cancel := context.WithTimeout(context.Background(), l.askTimeout)
	defer cancel()
	if _, err := cl.Ask(ctx, "counter", l.ids[i], []byte(fmt.Sprintf("inc-after %dms", d.Milliseconds()))); err != nil {
		l.reminderErrs.Add(1)
		l.noteErr(err)
		return
	}
	l.mu.Lock()
	l.counters[i].reminders++
	l.mu.Unlock()
}

func (l *load) noteErr(err error) {
	s := err.Error()
	if len(s) > 90 {
		s = s[:90] + "…"
	}
	l.errMu.Lock()
	l.errCounts[s]++
	l.errMu.Unlock()
}

// topErrors returns the n most frequent error texts with their counts.
func (l *load) topErrors(n int) []string {
	l.errMu.Lock()
	defer l.errMu.Unlock()
	type kv struct {
		k string
		v int
	}
	var all []kv
	for k, v := range l.errCounts {
		all = append(all, kv{k, v})
	}
	for i := range all {
		for j := i + 1; j < len(all); j++ {
			if all[j].v > all[i].v || all[j].v == all[i].v && all[j].k < all[i].k {
				all[i], all[j] = all[j], all[i]
			}
		}
	}
	var out []string
	for i := 0; i < len(all) && i < n; i++ {
		out = append(out, fmt.Sprintf("%6d× %s", all[i].v, all[i].k))
	}
	return out
}
