package shardmesh_test

import (
	"bufio"
	"context"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/network"

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
// counted when the receiving goroutine has read them.
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
	rawRate := raw(max(b.N, 100_000))
	b.ReportMetric(tellRate, "msgs/s")
	b.ReportMetric(rawRate, "raw-msgs/s")
	b.ReportMetric(tellRate/rawRate, "ratio")
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
	var read atomic.Int64
	got := make(chan struct{}, 1)
	server.LibP2P().SetStreamHandler("/bench/oneway/1", func(st network.Stream) {
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
	id, err := client.Connect(ctx, server.Addrs()[0])
	if err != nil {
		tb.Fatal(err)
	}
	payload := make([]byte, tellPayloadSize)
	return func(n int) float64 {
		st, err := client.LibP2P().NewStream(ctx, id, "/bench/oneway/1")
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
