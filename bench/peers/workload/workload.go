package workload

import (
	"fmt"
	"net"
	"slices"
	"sync/atomic"
	"time"
)

// PayloadSize is the payload of every message: 100 bytes, as in shardmesh's
// BenchmarkRemoteTell.
const PayloadSize = 100

// Window is the most messages in flight (sent, not yet processed). The frameworks' remote
// queues drop or grow without bound when one goroutine outruns the wire; shardmesh applies
// backpressure of its own, so the peers get this in-process window instead. It is far above
// what the wire batches, so it does not limit the rate.
const Window = 100_000

// Workload is the remote tell workload.
type Workload struct {
	Messages int
	Targets  int
	Payload  []byte
	Window   int
}

// Counter counts what the target actors processed.
type Counter struct{ N atomic.Int64 }

// Drive sends w.Messages with send (target index, message number), keeping at most
// w.Window in flight, and waits until processed reaches w.Messages; it returns the rate.
func (w Workload) Drive(processed *Counter, send func(target, i int)) (float64, error) {
	processed.N.Store(0)
	start := time.Now()
	for i := range w.Messages {
		for int64(i)-processed.N.Load() >= int64(w.Window) {
			time.Sleep(50 * time.Microsecond)
		}
		send(i%w.Targets, i)
	}
	deadline := time.Now().Add(2 * time.Minute)
	for processed.N.Load() < int64(w.Messages) {
		if time.Now().After(deadline) {
			return 0, fmt.Errorf("%d of %d messages processed after 2 minutes", processed.N.Load(), w.Messages)
		}
		time.Sleep(100 * time.Microsecond)
	}
	return float64(w.Messages) / time.Since(start).Seconds(), nil
}

// FreePort returns a loopback TCP port that was free a moment ago.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// AskPayloadSize is the payload of an ask and of its reply: a few bytes, as shardmesh's
// BenchmarkRemoteAsk sends an int.
const AskPayloadSize = 8

// AskTargets is how many actors the ask workload asks in turn, as shardmesh's
// BenchmarkRemoteAsk asks 100 entities.
const AskTargets = 100

// Latencies are the durations of the asks of one run.
type Latencies []time.Duration

// Percentile returns the p-th percentile (0 < p < 1) in microseconds.
func (l Latencies) Percentile(p float64) float64 {
	s := slices.Clone(l)
	slices.Sort(s)
	return float64(s[int(float64(len(s)-1)*p)].Nanoseconds()) / 1e3
}

// Asks makes w.Messages asks one after another with ask (target index), each waiting for
// its reply, after 1,000 that warm the path, and returns their latencies: the request/
// response counterpart of shardmesh's BenchmarkRemoteAsk.
func (w Workload) Asks(ask func(target int) error) (Latencies, error) {
	for i := range 1000 {
		if err := ask(i % w.Targets); err != nil {
			return nil, fmt.Errorf("warm-up ask %d: %w", i, err)
		}
	}
	l := make(Latencies, 0, w.Messages)
	for i := range w.Messages {
		start := time.Now()
		if err := ask(i % w.Targets); err != nil {
			return nil, fmt.Errorf("ask %d: %w", i, err)
		}
		l = append(l, time.Since(start))
	}
	return l, nil
}
