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
// larger than a maximum size.
type FrameReader struct {
	r   *bufio.Reader
	max int
	buf []byte // reused for frames larger than r's buffer
}

// NewFrameReader returns a FrameReader over r that refuses frames larger than maxSize
// bytes (maxSize <= 0 means DefaultMaxFrameSize).
func NewFrameReader(r *bufio.Reader, maxSize int) *FrameReader {
	if maxSize <= 0 {
		maxSize = DefaultMaxFrameSize
	}
	return &FrameReader{r: r, max: maxSize}
}

// ReadFrame reads the next frame. The returned slice is valid only until the next call.
//
// It returns io.EOF when the input ends cleanly between frames; an error wrapping
// ErrMalformedFrame when the length prefix overflows or the input ends inside a frame;
// an error wrapping ErrFrameTooLarge, after reading only the length prefix, when the
// announced length exceeds the maximum; and the underlying reader's error otherwise.
func (fr *FrameReader) ReadFrame() ([]byte, error) {
	n, err := fr.readLength()
	if err != nil {
		return nil, err
	}
	if n > uint64(fr.max) {
		return nil, fmt.Errorf("%w: peer announced %d bytes, limit is %d", ErrFrameTooLarge, n, fr.max)
	}
	size := int(n)
	if size <= fr.r.Size() {
		// Fits the bufio buffer: hand out a view of it, no copy.
		b, err := fr.r.Peek(size)
		if err != nil {
			return nil, truncated(err, len(b), size)
		}
		_, _ = fr.r.Discard(size) // cannot fail: Peek returned size bytes
		return b, nil
	}
	buf := fr.buf[:0]
	for len(buf) < size {
		if len(buf) == cap(buf) {
			grown := make([]byte, len(buf), min(size, max(growStep, 2*cap(buf))))
			copy(grown, buf)
			buf = grown
		}
		m, err := io.ReadFull(fr.r, buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+m]
		if err != nil {
			fr.buf = buf[:0]
			return nil, truncated(err, len(buf), size)
		}
	}
	fr.buf = buf[:0]
	return buf, nil
}

// truncated maps an end of input inside a frame body to ErrMalformedFrame.
func truncated(err error, got, want int) error {
	if err == io.EOF || errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("%w: input ends after %d of %d frame bytes", ErrMalformedFrame, got, want)
	}
	return err
}

// readLength reads the uvarint length prefix of the next frame.
func (fr *FrameReader) readLength() (uint64, error) {
	var x uint64
	var shift uint
	for i := range binary.MaxVarintLen64 {
		b, err := fr.r.ReadByte()
		if err != nil {
			if err == io.EOF && i > 0 {
				return 0, fmt.Errorf("%w: input ends inside the length prefix", ErrMalformedFrame)
			}
			return 0, err // io.EOF before the first byte: a clean end
		}
		if b < 0x80 {
			if i == binary.MaxVarintLen64-1 && b > 1 {
				break
			}
			return x | uint64(b)<<shift, nil
		}
		x |= uint64(b&0x7f) << shift
		shift += 7
	}
	return 0, fmt.Errorf("%w: length prefix overflows 64 bits", ErrMalformedFrame)
}
