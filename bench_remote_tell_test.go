package shardmesh_test

import (
	"bufio"
	"context"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p"
	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/p2p/transport/tcp"

	"github.com/shardmesh/shardmesh"
	"github.com/shardmesh/shardmesh/p2p"
)

// tellPayloadSize is the payload of every one-way message in BenchmarkRemoteTell and in
// bench/peers: 100 bytes, as the raw libp2p figure in DEPENDENCIES.md.
const tellPayloadSize = 100

// bytesCodec carries a []byte as it is.
type bytesCodec struct{}

func (bytesCodec) Marshal(v []byte) ([]byte, error)   { return v, nil }
func (bytesCodec) Unmarshal(b []byte) ([]byte, error) { return b, nil }

// byteSinkType counts the messages its entities handle (and checks their size).
func byteSinkType(handled, wrong *atomic.Int64) shardmesh.Entity[[]byte, []byte] {
	return shardmesh.Entity[[]byte, []byte]{
		Key: shardmesh.NewEntityTypeKey[[]byte, []byte]("byte-sink"),
		New: func(*shardmesh.Context) shardmesh.Behavior[[]byte, []byte] {
			return shardmesh.BehaviorFunc[[]byte, []byte](func(_ *shardmesh.Context, m []byte) ([]byte, error) {
				if len(m) != tellPayloadSize {
					wrong.Add(1)
				}
				handled.Add(1)
				return nil, nil
			})
		},
		MessageCodec: bytesCodec{},
		ReplyCodec:   bytesCodec{},
		Role:         "worker",
	}
}

// BenchmarkRemoteTell: one goroutine telling 100-byte messages to 1,000 entities on another
// member (two members in this process over real libp2p on loopback), until the entities
// have handled every one; next to the raw figure of the same run: 100-byte frames
// pipelined one way on one long-lived libp2p stream through a 64 KiB buffered writer,
// counted when the receiving goroutine has read them; and the same without Noise (what
// encryption costs a message: the Go peers do not pay it).
func BenchmarkRemoteTell(b *testing.B) {
	var handled, wrong atomic.Int64
	proxySys, workerSys := workerPair(b)
	if _, err := shardmesh.Init(workerSys, byteSinkType(&handled, &wrong)); err != nil {
		b.Fatal(err)
	}
	r, err := shardmesh.Init(proxySys, byteSinkType(&handled, &wrong))
	if err != nil {
		b.Fatal(err)
	}
	payload := make([]byte, tellPayloadSize)
	refs := make([]shardmesh.EntityRef[[]byte, []byte], 1000)
	for i := range refs {
		refs[i] = r.EntityRefFor("e" + strconv.Itoa(i))
		if _, err := refs[i].Ask(context.Background(), payload); err != nil {
			b.Fatal(err)
		}
	}
	raw := rawOneWay(b)
	handled.Store(0)
	b.ResetTimer()
	start := time.Now()
	for i := range b.N {
		if err := refs[i%len(refs)].Tell(payload); err != nil {
			b.Fatal(err)
		}
	}
	deadline := time.Now().Add(time.Minute)
	for handled.Load() < int64(b.N) && time.Now().Before(deadline) {
		time.Sleep(100 * time.Microsecond)
	}
	tellRate := float64(b.N) / time.Since(start).Seconds()
	b.StopTimer()
	if got := handled.Load(); got < int64(b.N) {
		b.Fatalf("%d of %d tells handled", got, b.N)
	}
	if wrong.Load() > 0 {
		b.Fatalf("%d messages arrived with the wrong size", wrong.Load())
	}
	n := max(b.N, 100_000)
	rawRate := raw(n)
	plainRate := rawOneWayPlain(b)(n)
	b.ReportMetric(tellRate, "msgs/s")
	b.ReportMetric(rawRate, "raw-msgs/s")
	b.ReportMetric(tellRate/rawRate, "ratio")
	b.ReportMetric(plainRate, "raw-plain-msgs/s")
	// What Noise adds to a message on the raw stream, encrypting and decrypting.
	b.ReportMetric(1e9/rawRate-1e9/plainRate, "noise-ns/msg")
}

// rawOneWay connects two fresh p2p hosts and returns a function that pipelines n 100-byte
// frames one way on one new stream and returns the rate at which the receiver read them.
func rawOneWay(tb testing.TB) func(n int) float64 {
	tb.Helper()
	ctx := context.Background()
	newHost := func() *p2p.Host {
		key, _, _ := crypto.GenerateEd25519Key(nil)
		h, err := p2p.New(ctx, p2p.Config{Identity: key})
		if err != nil {
			tb.Fatal(err)
		}
		tb.Cleanup(func() { h.Close() })
		return h
	}
	server, client := newHost(), newHost()
	if _, err := client.Connect(ctx, server.Addrs()[0]); err != nil {
		tb.Fatal(err)
	}
	return oneWay(tb, client.LibP2P(), server.LibP2P())
}

// rawOneWayPlain is rawOneWay on libp2p hosts like p2p's (TCP, yamux) without Noise: the
// difference between the two is what Noise costs a message (which the Go peers, on plain
// TCP, do not pay).
func rawOneWayPlain(tb testing.TB) func(n int) float64 {
	tb.Helper()
	newHost := func() host.Host {
		h, err := libp2p.New(libp2p.ListenAddrStrings("/ip4/127.0.0.1/tcp/0"), libp2p.Transport(tcp.NewTCPTransport),
			libp2p.NoSecurity, libp2p.DisableRelay(), libp2p.DisableMetrics())
		if err != nil {
			tb.Fatal(err)
		}
		tb.Cleanup(func() { h.Close() })
		return h
	}
	server, client := newHost(), newHost()
	if err := client.Connect(context.Background(), peer.AddrInfo{ID: server.ID(), Addrs: server.Addrs()}); err != nil {
		tb.Fatal(err)
	}
	return oneWay(tb, client, server)
}

// oneWay returns a function that pipelines n 100-byte frames from client to server on one
// new stream and returns the rate at which the server read them.
func oneWay(tb testing.TB, client, server host.Host) func(n int) float64 {
	ctx := context.Background()
	var read atomic.Int64
	got := make(chan struct{}, 1)
	server.SetStreamHandler("/bench/oneway/1", func(st network.Stream) {
		defer st.Close()
		fr := p2p.NewFrameReader(bufio.NewReaderSize(st, 64<<10), 1<<20)
		for {
			f, err := fr.ReadFrame()
			if err != nil {
				return
			}
			if len(f) == tellPayloadSize {
				if read.Add(1) < 0 {
					return
				}
			}
			select {
			case got <- struct{}{}:
			default:
			}
		}
	})
	id := server.ID()
	payload := make([]byte, tellPayloadSize)
	return func(n int) float64 {
		st, err := client.NewStream(ctx, id, "/bench/oneway/1")
		if err != nil {
			tb.Fatal(err)
		}
		defer st.Close()
		read.Store(0)
		w := bufio.NewWriterSize(st, 64<<10)
		frame := p2p.AppendFrame(nil, payload)
		start := time.Now()
		for range n {
			if _, err := w.Write(frame); err != nil {
				tb.Fatal(err)
			}
		}
		if err := w.Flush(); err != nil {
			tb.Fatal(err)
		}
		deadline := time.Now().Add(time.Minute)
		for read.Load() < int64(n) && time.Now().Before(deadline) {
			select {
			case <-got:
			case <-time.After(time.Millisecond):
			}
		}
		if read.Load() < int64(n) {
			tb.Fatalf("raw: %d of %d frames read", read.Load(), n)
		}
		return float64(n) / time.Since(start).Seconds()
	}
}
