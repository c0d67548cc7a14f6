package simulator

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
)

// Format is the layout of an access trace file.
type Format uint8

// The trace formats Akka's simulator reads that this one supports too.
const (
	// LIRS traces (from the authors of the LIRS algorithm): one integer id per line; a line
	// "*" is a checkpoint marker, not an access.
	LIRS Format = iota + 1
	// ARC traces (from the ARC paper): lines "start count ignored ignored", each meaning
	// count consecutive ids from start.
	ARC
	// Simple traces: one id per line, any text.
	Simple
)

// String returns the format's name as the command line spells it.
func (f Format) String() string {
	switch f {
	case LIRS:
		return "lirs"
	case ARC:
		return "arc"
	case Simple:
		return "simple"
	default:
		return fmt.Sprintf("Format(%d)", uint8(f))
	}
}

// ParseFormat reads a format name: lirs, arc or simple.
func ParseFormat(name string) (Format, error) {
	switch strings.ToLower(strings.TrimSpace(name)) {
	case "lirs":
		return LIRS, nil
	case "arc":
		return ARC, nil
	case "simple":
		return Simple, nil
	}
	return 0, fmt.Errorf("unknown trace format %q (want lirs, arc or simple)", name)
}

// maxRun bounds the count of one ARC line, so a corrupt line cannot run forever.
const maxRun = 1 << 24

// ScanTrace reads a trace, plain or gzip-compressed (detected by its magic bytes), and
// calls fn with each accessed id in order; it stops at the first error, its own or fn's.
// Surrounding white space (including a Windows line end) is not part of an id and blank
// lines are skipped in every format.
func ScanTrace(r io.Reader, format Format, fn func(id string) error) error {
	return scanIDs(r, format, func(id []byte) error { return fn(string(id)) })
}

// ReadTrace reads all the accesses of a trace (see ScanTrace).
func ReadTrace(r io.Reader, format Format) ([]string, error) {
	var ids []string
	err := ScanTrace(r, format, func(id string) error {
		ids = append(ids, id)
		return nil
	})
	return ids, err
}

// Trace is an access trace read once: each access as the index of its entity among the
// distinct ids, so that replaying it (RunTrace) compares and hashes no strings, and so
// that millions of accesses take 4 bytes each.
type Trace struct {
	// Accesses are the accessed entities, in order, as indexes into IDs.
	Accesses []uint32
	// IDs are the distinct entity ids, in the order of their first access.
	IDs []string
}

// NewTrace returns the trace of the accesses ids.
func NewTrace(ids []string) *Trace {
	t := &Trace{Accesses: make([]uint32, 0, len(ids))}
	index := map[string]uint32{}
	for _, id := range ids {
		t.add(index, []byte(id))
	}
	return t
}

func (t *Trace) add(index map[string]uint32, id []byte) {
	i, ok := index[string(id)] // no allocation for an id seen before
	if !ok {
		s := string(id)
		i = uint32(len(t.IDs))
		t.IDs = append(t.IDs, s)
		index[s] = i
	}
	t.Accesses = append(t.Accesses, i)
}

// LoadTrace reads a trace as ScanTrace does, into a Trace: one allocation per distinct id,
// none per access.
func LoadTrace(r io.Reader, format Format) (*Trace, error) {
	t := &Trace{}
	index := map[string]uint32{}
	err := scanIDs(r, format, func(id []byte) error {
		t.add(index, id)
		return nil
	})
	return t, err
}

// scanIDs is ScanTrace with each id as bytes, valid only during the call to fn.
func scanIDs(r io.Reader, format Format, fn func(id []byte) error) error {
	br := bufio.NewReaderSize(r, 1<<16)
	if magic, err := br.Peek(2); err == nil && bytes.Equal(magic, []byte{0x1f, 0x8b}) {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return fmt.Errorf("gzip: %w", err)
		}
		defer func() { _ = zr.Close() }()
		br = bufio.NewReaderSize(zr, 1<<16)
	}
	sc := bufio.NewScanner(br)
	sc.Buffer(make([]byte, 0, 1<<16), 1<<20)
	line := 0
	var arcID []byte
	for sc.Scan() {
		line++
		text := bytes.TrimSpace(sc.Bytes())
		if len(text) == 0 {
			continue
		}
		switch format {
		case Simple:
			if err := fn(text); err != nil {
				return err
			}
		case LIRS:
			if len(text) == 1 && text[0] == '*' {
				continue
			}
			if !isUint64(text) {
				return fmt.Errorf("line %d: %q is not a LIRS block id (an unsigned integer, or * for a marker)", line, text)
			}
			if err := fn(text); err != nil {
				return err
			}
		case ARC:
			var err error
			if arcID, err = scanARC(string(text), line, arcID, fn); err != nil {
				return err
			}
		default:
			return fmt.Errorf("unknown trace format %v", format)
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("line %d: %w", line+1, err)
	}
	return nil
}

// isUint64 reports whether b is what strconv.ParseUint(b, 10, 64) accepts: decimal digits
// only, at most 2^64-1.
func isUint64(b []byte) bool {
	if len(b) == 0 || len(b) > 20 {
		return false
	}
	var v uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			return false
		}
		d := uint64(c - '0')
		if v > (math.MaxUint64-d)/10 {
			return false
		}
		v = v*10 + d
	}
	return true
}

// scanARC calls fn with each id of an ARC line, formatted into buf (returned for reuse).
func scanARC(text string, line int, buf []byte, fn func(id []byte) error) ([]byte, error) {
	fields := strings.Fields(text)
	if len(fields) < 2 {
		return buf, fmt.Errorf("line %d: %q is not an ARC line (start count ignored ignored)", line, text)
	}
	start, err := strconv.ParseInt(fields[0], 10, 64)
	if err != nil {
		return buf, fmt.Errorf("line %d: ARC start %q is not an integer", line, fields[0])
	}
	count, err := strconv.Atoi(fields[1])
	if err != nil || count < 0 || count > maxRun {
		return buf, fmt.Errorf("line %d: ARC count %q is not an integer from 0 to %d", line, fields[1], maxRun)
	}
	for i := range int64(count) {
		buf = strconv.AppendInt(buf[:0], start+i, 10)
		if err := fn(buf); err != nil {
			return buf, err
		}
	}
	return buf, nil
}
