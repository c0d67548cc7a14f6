package p2p

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"runtime"
	"strings"
	"testing"
)

func TestFrameRoundTrip(t *testing.T) {
	payloads := [][]byte{
		{},
		[]byte("x"),
		bytes.Repeat([]byte("a"), 127),
		bytes.Repeat([]byte("b"), 128),
		bytes.Repeat([]byte("c"), 4095),   // fits the 4 KiB bufio buffer below: no copy
		bytes.Repeat([]byte("d"), 4097),   // larger: read into the reader's own buffer
		bytes.Repeat([]byte("e"), 300000), // several growth steps
		bytes.Repeat([]byte("f"), 5000),   // reuses the larger buffer: must not read past its end
		[]byte("last"),
	}
	var wire []byte
	for _, p := range payloads {
		wire = AppendFrame(wire, p)
	}
	fr := NewFrameReader(bufio.NewReaderSize(bytes.NewReader(wire), 4096), 1<<20)
	for i, want := range payloads {
		got, err := fr.ReadFrame()
		if err != nil {
			t.Fatalf("frame %d: %v", i, err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("frame %d: got %d bytes, want %d", i, len(got), len(want))
		}
	}
	if _, err := fr.ReadFrame(); err != io.EOF {
		t.Fatalf("after the last frame: got %v, want io.EOF", err)
	}
}

func TestFrameReaderRejects(t *testing.T) {
	uvarint := func(n uint64) []byte { return binary.AppendUvarint(nil, n) }
	tests := []struct {
		name  string
		input []byte
		want  error
	}{
		{"announced larger than max", append(uvarint(1001), "abc"...), ErrFrameTooLarge},
		{"announced 100 MB", uvarint(100 << 20), ErrFrameTooLarge},
		{"prefix overflows", bytes.Repeat([]byte{0xff}, 11), ErrMalformedFrame},
		{"tenth prefix byte too big", append(bytes.Repeat([]byte{0x80}, 9), 0x02), ErrMalformedFrame},
		{"prefix not minimal", []byte{0x85, 0x00, 1, 2, 3, 4, 5}, ErrMalformedFrame},
		{"ends inside prefix", []byte{0x80}, ErrMalformedFrame},
		{"ends inside small body", append(uvarint(10), "abc"...), ErrMalformedFrame},
		{"ends inside large body", append(uvarint(1000), make([]byte, 500)...), ErrMalformedFrame},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fr := NewFrameReader(bufio.NewReaderSize(bytes.NewReader(tt.input), 16), 1000)
			_, err := fr.ReadFrame()
			if !errors.Is(err, tt.want) {
				t.Fatalf("got %v, want %v", err, tt.want)
			}
			if _, again := fr.ReadFrame(); !errors.Is(again, tt.want) {
				t.Fatalf("second call: got %v, want the same error again", again)
			}
		})
	}
}

// TestFrameReaderDoesNotAllocateAnnouncedSize: a peer that announces a frame and sends
// little of it makes the reader allocate about what it sent, not what it announced.
func TestFrameReaderDoesNotAllocateAnnouncedSize(t *testing.T) {
	for _, tt := range []struct {
		name      string
		announced uint64
		want      error
	}{
		{"100 MB over the limit", 100 << 20, ErrFrameTooLarge},
		{"under the 64 MB limit, 1 KiB sent", 60 << 20, ErrMalformedFrame},
	} {
		t.Run(tt.name, func(t *testing.T) {
			input := append(binary.AppendUvarint(nil, tt.announced), make([]byte, 1024)...)
			fr := NewFrameReader(bufio.NewReaderSize(bytes.NewReader(input), 4096), 64<<20)
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			_, err := fr.ReadFrame()
			runtime.ReadMemStats(&after)
			if !errors.Is(err, tt.want) {
				t.Fatalf("got %v, want %v", err, tt.want)
			}
			if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 1<<20 {
				t.Fatalf("allocated %d bytes for a %d-byte announcement", alloc, tt.announced)
			}
		})
	}
}

// timeoutReader returns a timeout error once at the given offset, then continues.
type timeoutReader struct {
	data    []byte
	off     int
	failAt  int
	failed  bool
	maxRead int
}

type timeoutError struct{}

func (timeoutError) Error() string { return "i/o timeout" }
func (timeoutError) Timeout() bool { return true }

func (r *timeoutReader) Read(p []byte) (int, error) {
	if r.off == len(r.data) {
		return 0, io.EOF
	}
	if !r.failed && r.off >= r.failAt {
		r.failed = true
		return 0, timeoutError{}
	}
	end := min(len(r.data), r.off+len(p), r.off+r.maxRead)
	if !r.failed && end > r.failAt {
		end = r.failAt
	}
	n := copy(p, r.data[r.off:end])
	r.off += n
	return n, nil
}

// TestFrameReaderResumesAfterDeadline: a read error inside a body (a deadline) does not
// lose the frame; the next call picks up where the failed one stopped.
func TestFrameReaderResumesAfterDeadline(t *testing.T) {
	small := []byte(strings.Repeat("s", 100))
	large := []byte(strings.Repeat("L", 5000))
	var wire []byte
	wire = AppendFrame(wire, small)
	wire = AppendFrame(wire, large)
	wire = AppendFrame(wire, small)
	for failAt := range len(wire) {
		r := &timeoutReader{data: wire, failAt: failAt, maxRead: 700}
		fr := NewFrameReader(bufio.NewReaderSize(r, 1024), 1<<20)
		var got [][]byte
		timeouts := 0
		for {
			frame, err := fr.ReadFrame()
			if err == io.EOF {
				break
			}
			var te timeoutError
			if errors.As(err, &te) {
				timeouts++
				continue
			}
			if err != nil {
				t.Fatalf("failAt %d: %v", failAt, err)
			}
			got = append(got, append([]byte(nil), frame...))
		}
		if timeouts != 1 || len(got) != 3 || !bytes.Equal(got[0], small) || !bytes.Equal(got[1], large) || !bytes.Equal(got[2], small) {
			t.Fatalf("failAt %d: %d timeouts, %d frames", failAt, timeouts, len(got))
		}
	}
}

// TestAppendFrameNoAlloc: appending to a buffer with room allocates nothing.
func TestAppendFrameNoAlloc(t *testing.T) {
	buf := make([]byte, 0, 1024)
	payload := make([]byte, 100)
	if n := testing.AllocsPerRun(100, func() { buf = AppendFrame(buf[:0], payload) }); n != 0 {
		t.Fatalf("AppendFrame allocated %v times per call", n)
	}
}

// FuzzFrameReader feeds arbitrary bytes to a FrameReader with a small buffer (so both
// the no-copy and the growing path run) and checks that it never panics, never returns a
// frame over the limit, ends with io.EOF only at a frame boundary at the end of the
// input, reads nothing for a frame Buffered reports, and that the frames it returns
// re-encode to exactly the bytes it consumed.
func FuzzFrameReader(f *testing.F) {
	f.Add([]byte{}, uint16(100))
	f.Add(AppendFrame(AppendFrame(nil, []byte("hello")), []byte{}), uint16(100))
	f.Add(AppendFrame(nil, bytes.Repeat([]byte{7}, 300)), uint16(1000))
	f.Add(binary.AppendUvarint(nil, 100<<20), uint16(1000))
	f.Add(bytes.Repeat([]byte{0xff}, 12), uint16(100))
	f.Add([]byte{0x80, 0x00}, uint16(100))
	f.Fuzz(func(t *testing.T, data []byte, limit uint16) {
		maxSize := int(limit) + 1
		r := &countingReader{r: bytes.NewReader(data), chunk: 16}
		fr := NewFrameReader(bufio.NewReaderSize(r, 16), maxSize)
		var reencoded []byte
		for {
			buffered, reads := fr.Buffered(), r.reads
			frame, err := fr.ReadFrame()
			if buffered && r.reads != reads {
				t.Fatalf("a frame reported buffered needed a read (%d → %d reads)", reads, r.reads)
			}
			if err == io.EOF {
				if !bytes.Equal(reencoded, data) {
					t.Fatalf("io.EOF after consuming %d of %d bytes, or frames re-encode differently", len(reencoded), len(data))
				}
				return
			}
			if err != nil {
				if !errors.Is(err, ErrMalformedFrame) && !errors.Is(err, ErrFrameTooLarge) {
					t.Fatalf("unexpected error %v", err)
				}
				if !bytes.HasPrefix(data, reencoded) {
					t.Fatal("frames before the error re-encode to bytes that are not a prefix of the input")
				}
				return
			}
			if len(frame) > maxSize {
				t.Fatalf("frame of %d bytes over the limit %d", len(frame), maxSize)
			}
			reencoded = AppendFrame(reencoded, frame)
			if len(reencoded) > len(data) {
				t.Fatal("frames longer than the input")
			}
		}
	})
}
