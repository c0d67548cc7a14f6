package p2p

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"sync"
	"testing"

	"github.com/libp2p/go-libp2p/core/peer"
)

// sinkRecorder is a FrameSink that records frames and, for each Flush, how many frames had
// arrived by then.
type sinkRecorder struct {
	mu      sync.Mutex
	frames  [][]byte
	flushes []int
	got     chan struct{} // one per Flush
}

func (r *sinkRecorder) Frame(frame []byte) error {
	r.mu.Lock()
	r.frames = append(r.frames, bytes.Clone(frame))
	r.mu.Unlock()
	return nil
}

func (r *sinkRecorder) Flush() error {
	r.mu.Lock()
	r.flushes = append(r.flushes, len(r.frames))
	r.mu.Unlock()
	r.got <- struct{}{}
	return nil
}

// TestSendFramesInOrder: batches of frames (SendFrames, TrySendFrames) and single frames
// (Send) queued from one goroutine arrive in order, and the receiver's sink is flushed
// once what arrived together is taken — after the last frame at the latest.
func TestSendFramesInOrder(t *testing.T) {
	const batches, each = 200, 50
	a := newHost(t, nil)
	b := newHost(t, nil)
	rec := &sinkRecorder{got: make(chan struct{}, batches*(each+1))}
	b.HandleSinks(testProto, func(from peer.ID) FrameSink {
		if from != a.ID() {
			t.Errorf("a stream from %s", from)
		}
		return rec
	})
	connect(t, a, b)
	ctx := testContext(t)
	seq := uint64(0)
	frame := func() []byte {
		seq++
		return binary.BigEndian.AppendUint64(nil, seq)
	}
	for i := range batches {
		var single []byte // sent alone before the batch
		if i%3 == 2 {
			single = frame()
		}
		var framed []byte
		for range each {
			framed = AppendFrame(framed, frame())
		}
		var err error
		switch i % 3 {
		case 0:
			err = a.SendFrames(ctx, b.ID(), testProto, framed, each)
		case 1:
			if err = a.TrySendFrames(b.ID(), testProto, framed, each); errors.Is(err, ErrWouldBlock) {
				err = a.SendFrames(ctx, b.ID(), testProto, framed, each)
			}
		default:
			err = a.Send(ctx, b.ID(), testProto, single)
			if err == nil {
				err = a.SendFrames(ctx, b.ID(), testProto, framed, each)
			}
		}
		if err != nil {
			t.Fatalf("batch %d: %v", i, err)
		}
		clear(framed) // the frames were copied
	}
	waitFor(t, "every frame, flushed", func() bool {
		rec.mu.Lock()
		defer rec.mu.Unlock()
		return len(rec.flushes) > 0 && rec.flushes[len(rec.flushes)-1] == int(seq)
	})
	rec.mu.Lock()
	defer rec.mu.Unlock()
	for i, f := range rec.frames {
		if got := binary.BigEndian.Uint64(f); got != uint64(i+1) {
			t.Fatalf("frame %d carries %d", i+1, got)
		}
	}
	if s := a.Stats(); s.FramesOut != seq || s.StreamsOpened != 1 {
		t.Fatalf("sender stats %+v: want %d frames out on one stream", s, seq)
	}
}

// TestSendFramesChecksFraming: a batch that does not hold exactly the frames announced, or
// holds one over the limit, is refused whole, naming why.
func TestSendFramesChecksFraming(t *testing.T) {
	a := newHost(t, func(c *Config) { c.MaxFrameSize = 64 })
	b := newHost(t, nil)
	b.Handle(testProto, newReceived(1).handler)
	connect(t, a, b)
	ctx := testContext(t)
	two := AppendFrame(AppendFrame(nil, []byte("one")), []byte("two"))
	for _, c := range []struct {
		name   string
		framed []byte
		n      int
		want   error
	}{
		{"fewer frames than announced", two, 3, ErrMalformedFrame},
		{"more frames than announced", two, 1, ErrMalformedFrame},
		{"a frame cut short", two[:len(two)-1], 2, ErrMalformedFrame},
		{"a prefix cut short", []byte{0x80}, 1, ErrMalformedFrame},
		{"a frame over the limit", AppendFrame(nil, make([]byte, 65)), 1, ErrFrameTooLarge},
	} {
		if err := a.SendFrames(ctx, b.ID(), testProto, c.framed, c.n); !errors.Is(err, c.want) {
			t.Errorf("%s: got %v, want %v", c.name, err, c.want)
		}
		if err := a.TrySendFrames(b.ID(), testProto, c.framed, c.n); !errors.Is(err, c.want) {
			t.Errorf("%s (TrySendFrames): got %v, want %v", c.name, err, c.want)
		}
	}
	if s := a.Stats(); s.FramesOut != 0 || s.StreamsOpened != 0 {
		t.Fatalf("refused batches reached the stream: %+v", s)
	}
	if err := a.TrySendFrames(b.ID(), testProto, two, 2); !errors.Is(err, ErrWouldBlock) {
		t.Fatalf("TrySendFrames before any stream is open: got %v, want ErrWouldBlock", err)
	}
}

// TestFrameReaderBuffered: Buffered reports a frame as there exactly when all of it is in
// the buffer.
func TestFrameReaderBuffered(t *testing.T) {
	data := AppendFrame(AppendFrame(nil, []byte("first")), bytes.Repeat([]byte{1}, 20))
	r := &countingReader{r: bytes.NewReader(data), chunk: 8}
	fr := NewFrameReader(bufio.NewReaderSize(r, 64), 100)
	if fr.Buffered() {
		t.Fatal("a frame buffered before anything was read")
	}
	if f, err := fr.ReadFrame(); err != nil || string(f) != "first" {
		t.Fatalf("first frame: %q, %v", f, err)
	}
	// 8 bytes were read: the first frame (6) and 2 of the second's 21.
	if fr.Buffered() {
		t.Fatal("the second frame reported buffered with 2 of its 21 bytes read")
	}
	reads := r.reads
	if f, err := fr.ReadFrame(); err != nil || len(f) != 20 {
		t.Fatalf("second frame: %d bytes, %v", len(f), err)
	}
	if r.reads == reads {
		t.Fatal("the second frame came without reading")
	}
}

// countingReader reads at most chunk bytes per call and counts its calls.
type countingReader struct {
	r     *bytes.Reader
	chunk int
	reads int
}

func (c *countingReader) Read(p []byte) (int, error) {
	c.reads++
	return c.r.Read(p[:min(len(p), c.chunk)])
}
