package workload

import (
	"fmt"
	"net"
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
