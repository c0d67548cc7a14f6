package p2p

import (
	"bufio"
	"io"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/pnet"
	"github.com/libp2p/go-libp2p/core/protocol"
)

// Benchmarks of the network edge on loopback: first raw libp2p streams on the same host
// configuration (TCP, Noise, yamux; what every layer above pays at least), then the same
// traffic through this package. Compare with DEPENDENCIES.md "Raw figures".
//
//	go test -run '^$' -bench . -benchtime 2s ./p2p/

const (
	rawEchoProto = protocol.ID("/shardmesh/bench-raw-echo/1")
	rawSinkProto = protocol.ID("/shardmesh/bench-raw-sink/1")
	benchProto   = protocol.ID("/shardmesh/bench/1")
)

// benchPair returns two connected hosts that log nowhere.
func benchPair(b *testing.B) (client, server *Host) {
	b.Helper()
	quiet := func(c *Config) { c.Logger = nil }
	client, server = newHost(b, quiet), newHost(b, quiet)
	connect(b, client, server)
	return client, server
}

// latencies records one duration per operation and reports p50 and p99.
type latencies []time.Duration

func (l *latencies) report(b *testing.B) {
	if len(*l) == 0 {
		return
	}
	s := slices.Clone(*l)
	slices.Sort(s)
	b.ReportMetric(float64(s[len(s)/2].Nanoseconds())/1e3, "p50-µs")
	b.ReportMetric(float64(s[len(s)*99/100].Nanoseconds())/1e3, "p99-µs")
}

// serveRawEcho answers every 64-byte read with the same 64 bytes, on each stream.
func serveRawEcho(h *Host) {
	h.LibP2P().SetStreamHandler(rawEchoProto, func(s network.Stream) {
		defer func() { _ = s.Close() }()
		buf := make([]byte, 64)
		for {
			if _, err := io.ReadFull(s, buf); err != nil {
				return
			}
			if _, err := s.Write(buf); err != nil {
				return
			}
		}
	})
}

// BenchmarkRawStreamRoundTrip64: 64 B request, 64 B response, one long-lived stream.
func BenchmarkRawStreamRoundTrip64(b *testing.B) {
	client, server := benchPair(b)
	serveRawEcho(server)
	s, err := client.LibP2P().NewStream(testContext(b), server.ID(), rawEchoProto)
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = s.Reset() }()
	buf := make([]byte, 64)
	lat := make(latencies, 0, b.N)
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		if _, err := s.Write(buf); err != nil {
			b.Fatal(err)
		}
		if _, err := io.ReadFull(s, buf); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(start))
	}
	b.StopTimer()
	lat.report(b)
}

// BenchmarkRawNewStreamPerRequest: open a stream, 64 B request, 64 B response, close.
func BenchmarkRawNewStreamPerRequest(b *testing.B) {
	client, server := benchPair(b)
	serveRawEcho(server)
	ctx := testContext(b)
	buf := make([]byte, 64)
	lat := make(latencies, 0, b.N)
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		s, err := client.LibP2P().NewStream(ctx, server.ID(), rawEchoProto)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := s.Write(buf); err != nil {
			b.Fatal(err)
		}
		if _, err := io.ReadFull(s, buf); err != nil {
			b.Fatal(err)
		}
		_ = s.Close()
		lat = append(lat, time.Since(start))
	}
	b.StopTimer()
	lat.report(b)
}

// BenchmarkRawPipelinedOneWay100B: 100 B messages written back to back through a 64 KiB
// bufio.Writer on one stream; the receiver reads them one by one. Ends when the receiver
// has all b.N.
func BenchmarkRawPipelinedOneWay100B(b *testing.B) {
	client, server := benchPair(b)
	want := int64(b.N)
	done := make(chan struct{})
	server.LibP2P().SetStreamHandler(rawSinkProto, func(s network.Stream) {
		defer func() { _ = s.Close() }()
		r := bufio.NewReaderSize(s, 64<<10)
		msg := make([]byte, 100)
		for n := int64(0); n < want; n++ {
			if _, err := io.ReadFull(r, msg); err != nil {
				return
			}
		}
		close(done)
	})
	s, err := client.LibP2P().NewStream(testContext(b), server.ID(), rawSinkProto)
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = s.Reset() }()
	w := bufio.NewWriterSize(s, 64<<10)
	msg := make([]byte, 100)
	b.SetBytes(100)
	b.ResetTimer()
	for range b.N {
		if _, err := w.Write(msg); err != nil {
			b.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		b.Fatal(err)
	}
	<-done
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
}

// BenchmarkRawConcurrentRequests64: 64 goroutines, each with its own long-lived stream,
// doing 64 B request/response; b.N requests in total.
func BenchmarkRawConcurrentRequests64(b *testing.B) {
	benchConcurrent(b, func(client, server *Host) func() (func() error, func()) {
		serveRawEcho(server)
		return func() (func() error, func()) {
			s, err := client.LibP2P().NewStream(testContext(b), server.ID(), rawEchoProto)
			if err != nil {
				b.Fatal(err)
			}
			buf := make([]byte, 64)
			return func() error {
				if _, err := s.Write(buf); err != nil {
					return err
				}
				_, err := io.ReadFull(s, buf)
				return err
			}, func() { _ = s.Reset() }
		}
	})
}

// benchConcurrent runs b.N calls over 64 workers; setup returns a per-worker factory of
// (call, cleanup).
func benchConcurrent(b *testing.B, setup func(client, server *Host) func() (func() error, func())) {
	const workers = 64
	client, server := benchPair(b)
	newWorker := setup(client, server)
	calls := make([]func() error, workers)
	for i := range calls {
		call, cleanup := newWorker()
		calls[i] = call
		defer cleanup()
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	b.ResetTimer()
	for _, call := range calls {
		wg.Go(func() {
			for next.Add(1) <= int64(b.N) {
				if err := call(); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "req/s")
}

// BenchmarkSendHandle100B: one-way 100 B frames through Send (queued, batched by the
// writer goroutine) and a FrameHandler on the other side, from one goroutine. Ends when
// the handler has all b.N.
func BenchmarkSendHandle100B(b *testing.B) {
	benchSendHandle(b, 1, nil)
}

// BenchmarkSendHandle100BParallel: the same from 8 goroutines sharing one stream.
func BenchmarkSendHandle100BParallel(b *testing.B) {
	benchSendHandle(b, 8, nil)
}

// BenchmarkSendHandle100BClusterKey: BenchmarkSendHandle100B inside the private network
// (pnet.go: XSalsa20 over every byte).
func BenchmarkSendHandle100BClusterKey(b *testing.B) {
	benchSendHandle(b, 1, newPSK(b))
}

func benchSendHandle(b *testing.B, senders int, key pnet.PSK) {
	quiet := func(c *Config) { c.Logger, c.ClusterKey = nil, key }
	client, server := newHost(b, quiet), newHost(b, quiet)
	connect(b, client, server)
	want := int64(b.N)
	var got atomic.Int64
	done := make(chan struct{})
	handler := func(peer.ID, []byte) error {
		if got.Add(1) == want {
			close(done)
		}
		return nil
	}
	server.Handle(benchProto, handler)
	ctx := testContext(b)
	frame := make([]byte, 100)
	// Open the stream before timing.
	if err := client.Send(ctx, server.ID(), benchProto, frame); err != nil {
		b.Fatal(err)
	}
	got.Add(-1)
	var next atomic.Int64
	var wg sync.WaitGroup
	b.SetBytes(100)
	b.ReportAllocs()
	b.ResetTimer()
	for range senders {
		wg.Go(func() {
			frame := make([]byte, 100)
			for next.Add(1) <= want {
				for {
					err := client.Send(ctx, server.ID(), benchProto, frame)
					if err == nil {
						break
					}
					if !isQueueFull(err) {
						b.Error(err)
						return
					}
					// Queue full: let the writer drain. Counted in Stats.SendQueueFull.
					if err := client.Flush(ctx, server.ID(), benchProto); err != nil {
						b.Error(err)
						return
					}
				}
			}
		})
	}
	wg.Wait()
	select {
	case <-done:
	case <-ctx.Done():
		b.Fatalf("handler got %d of %d frames", got.Load(), want)
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
	b.ReportMetric(float64(client.Stats().SendQueueFull), "queue-full")
}

// BenchmarkSendHandleRoundTrip64: ping-pong of 64 B frames over Send/Handle in both
// directions (how an Ask travels): latency of one request plus its reply.
func BenchmarkSendHandleRoundTrip64(b *testing.B) {
	client, server := benchPair(b)
	replies := make(chan struct{}, 1)
	ctx := testContext(b)
	server.Handle(benchProto, func(from peer.ID, frame []byte) error {
		return server.Send(ctx, from, benchProto, frame)
	})
	client.Handle(benchProto, func(peer.ID, []byte) error {
		replies <- struct{}{}
		return nil
	})
	frame := make([]byte, 64)
	lat := make(latencies, 0, b.N)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		if err := client.Send(ctx, server.ID(), benchProto, frame); err != nil {
			b.Fatal(err)
		}
		<-replies
		lat = append(lat, time.Since(start))
	}
	b.StopTimer()
	lat.report(b)
}

// serveFramedEcho answers every frame on a Stream with the same frame.
func serveFramedEcho(h *Host) {
	h.HandleStream(benchProto, func(s *Stream) {
		for {
			frame, err := s.ReadFrame()
			if err != nil {
				return
			}
			if err := s.WriteFrame(frame); err != nil {
				return
			}
		}
	})
}

// BenchmarkStreamRoundTrip64: 64 B framed request and response over one Stream.
func BenchmarkStreamRoundTrip64(b *testing.B) {
	client, server := benchPair(b)
	serveFramedEcho(server)
	s, err := client.OpenStream(testContext(b), server.ID(), benchProto)
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = s.Reset() }()
	frame := make([]byte, 64)
	lat := make(latencies, 0, b.N)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		if err := s.WriteFrame(frame); err != nil {
			b.Fatal(err)
		}
		if _, err := s.ReadFrame(); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(start))
	}
	b.StopTimer()
	lat.report(b)
}

// BenchmarkOpenStreamPerCall64: the admin-call pattern, a new Stream per request.
func BenchmarkOpenStreamPerCall64(b *testing.B) {
	client, server := benchPair(b)
	serveFramedEcho(server)
	ctx := testContext(b)
	frame := make([]byte, 64)
	lat := make(latencies, 0, b.N)
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		s, err := client.OpenStream(ctx, server.ID(), benchProto)
		if err != nil {
			b.Fatal(err)
		}
		if err := s.WriteFrame(frame); err != nil {
			b.Fatal(err)
		}
		if _, err := s.ReadFrame(); err != nil {
			b.Fatal(err)
		}
		_ = s.Close()
		lat = append(lat, time.Since(start))
	}
	b.StopTimer()
	lat.report(b)
}

// BenchmarkStreamConcurrentRequests64: 64 goroutines, each with its own Stream, doing
// 64 B framed request/response.
func BenchmarkStreamConcurrentRequests64(b *testing.B) {
	benchConcurrent(b, func(client, server *Host) func() (func() error, func()) {
		serveFramedEcho(server)
		return func() (func() error, func()) {
			s, err := client.OpenStream(testContext(b), server.ID(), benchProto)
			if err != nil {
				b.Fatal(err)
			}
			frame := make([]byte, 64)
			return func() error {
				if err := s.WriteFrame(frame); err != nil {
					return err
				}
				_, err := s.ReadFrame()
				return err
			}, func() { _ = s.Reset() }
		}
	})
}
