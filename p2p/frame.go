package p2p

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// DefaultMaxFrameSize is the default Config.MaxFrameSize: 4 MiB.
const DefaultMaxFrameSize = 4 << 20

// growStep is the first allocation for a frame larger than the bufio.Reader's buffer;
// the buffer then doubles as bytes actually arrive, so a peer that announces a large
// frame and sends little makes us allocate at most about twice what it sent.
const growStep = 64 << 10

// AppendFrame appends payload to dst as one frame — uvarint(len(payload)) followed by
// payload — and returns the extended slice. An empty payload is a valid frame.
func AppendFrame(dst, payload []byte) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(payload)))
	return append(dst, payload...)
}

// FrameReader reads frames written by AppendFrame from a bufio.Reader, refusing frames
// larger than a maximum size. Frames that fit the bufio.Reader's buffer are returned
// without a copy.
type FrameReader struct {
	r         *bufio.Reader
	max       int
	size      int    // body size of the frame being read, -1 between frames
	prefix    uint64 // length prefix decoded so far
	prefixLen int    // bytes of the length prefix read so far
	buf       []byte // body read so far of a frame larger than r's buffer; reused
	err       error  // sticky: the input can no longer be parsed
}

// NewFrameReader returns a FrameReader over r that refuses frames larger than maxSize
// bytes (maxSize <= 0 means DefaultMaxFrameSize).
func NewFrameReader(r *bufio.Reader, maxSize int) *FrameReader {
	if maxSize <= 0 {
		maxSize = DefaultMaxFrameSize
	}
	return &FrameReader{r: r, max: maxSize, size: -1}
}

// ReadFrame reads the next frame. The returned slice is valid only until the next call.
//
// It returns io.EOF when the input ends cleanly between frames; an error wrapping
// ErrMalformedFrame when the length prefix overflows, is not minimally encoded (as
// AppendFrame writes it), or the input ends inside a frame; an error wrapping
// ErrFrameTooLarge, after reading only the length prefix, when the announced length
// exceeds the maximum; and the underlying reader's error otherwise. After
// ErrMalformedFrame or ErrFrameTooLarge every later call returns the same error. After
// any other read error (a deadline, say) the next call resumes where the failed one
// stopped, losing nothing.
func (fr *FrameReader) ReadFrame() ([]byte, error) {
	if fr.err != nil {
		return nil, fr.err
	}
	if fr.size < 0 {
		n, err := fr.readLength()
		if err != nil {
			return nil, err
		}
		if n > uint64(fr.max) {
			fr.err = fmt.Errorf("%w: peer announced %d bytes, limit is %d", ErrFrameTooLarge, n, fr.max)
			return nil, fr.err
		}
		fr.size = int(n)
		fr.buf = fr.buf[:0]
	}
	size := fr.size
	if size <= fr.r.Size() {
		// Fits the bufio buffer: hand out a view of it, no copy. Peek consumes nothing,
		// so a failed call can be resumed.
		b, err := fr.r.Peek(size)
		if err != nil {
			return nil, fr.bodyError(err, len(b))
		}
		_, _ = fr.r.Discard(size) // cannot fail: Peek returned size bytes
		fr.size = -1
		return b, nil
	}
	// Larger: grow the buffer as bytes arrive, never to the announced size up front.
	buf := fr.buf
	for len(buf) < size {
		if len(buf) == cap(buf) {
			grown := make([]byte, len(buf), min(size, max(growStep, 2*cap(buf))))
			copy(grown, buf)
			buf = grown
		}
		m, err := io.ReadFull(fr.r, buf[len(buf):min(size, cap(buf))])
		buf = buf[:len(buf)+m]
		if err != nil {
			fr.buf = buf
			return nil, fr.bodyError(err, len(buf))
		}
	}
	fr.buf = buf[:0]
	fr.size = -1
	return buf, nil
}

// Buffered reports whether the next frame has fully arrived in the reader's buffer, so
// that ReadFrame returns it without reading from the network.
func (fr *FrameReader) Buffered() bool {
	n := fr.r.Buffered()
	if fr.err != nil || fr.size >= 0 || fr.prefixLen > 0 || n == 0 {
		return false
	}
	b, _ := fr.r.Peek(min(n, binary.MaxVarintLen64)) // buffered: cannot fail
	size, m := binary.Uvarint(b)
	return m > 0 && size <= uint64(n-m)
}

// bodyError handles a read error inside a frame body after got bytes of it: the end of
// input makes the frame malformed for good; other errors leave the frame resumable.
func (fr *FrameReader) bodyError(err error, got int) error {
	if err == io.EOF || errors.Is(err, io.ErrUnexpectedEOF) {
		fr.err = fmt.Errorf("%w: input ends after %d of %d frame bytes", ErrMalformedFrame, got, fr.size)
		return fr.err
	}
	return err
}

// readLength reads the uvarint length prefix of the next frame. A read error other than
// the end of input leaves the prefix read so far in fr, to resume on the next call.
func (fr *FrameReader) readLength() (uint64, error) {
	for fr.prefixLen < binary.MaxVarintLen64 {
		b, err := fr.r.ReadByte()
		switch {
		case err == nil:
		case err == io.EOF && fr.prefixLen > 0:
			fr.err = fmt.Errorf("%w: input ends inside the length prefix", ErrMalformedFrame)
			return 0, fr.err
		default:
			return 0, err // io.EOF before the first byte is a clean end
		}
		i := fr.prefixLen
		fr.prefixLen++
		if b < 0x80 {
			if i == binary.MaxVarintLen64-1 && b > 1 {
				break
			}
			if b == 0 && i > 0 {
				fr.err = fmt.Errorf("%w: length prefix is not minimally encoded", ErrMalformedFrame)
				return 0, fr.err
			}
			n := fr.prefix | uint64(b)<<(7*i)
			fr.prefix, fr.prefixLen = 0, 0
			return n, nil
		}
		fr.prefix |= uint64(b&0x7f) << (7 * i)
	}
	fr.err = fmt.Errorf("%w: length prefix overflows 64 bits", ErrMalformedFrame)
	return 0, fr.err
}
