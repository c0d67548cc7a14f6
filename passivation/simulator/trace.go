package simulator

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
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
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	line := 0
	for sc.Scan() {
		line++
		text := strings.TrimSpace(sc.Text())
		if text == "" {
			continue
		}
		switch format {
		case Simple:
			if err := fn(text); err != nil {
				return err
			}
		case LIRS:
			if text == "*" {
				continue
			}
			if _, err := strconv.ParseUint(text, 10, 64); err != nil {
				return fmt.Errorf("line %d: %q is not a LIRS block id (an unsigned integer, or * for a marker)", line, text)
			}
			if err := fn(text); err != nil {
				return err
			}
		case ARC:
			if err := scanARC(text, line, fn); err != nil {
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

func scanARC(text string, line int, fn func(id string) error) error {
	fields := strings.Fields(text)
	if len(fields) < 2 {
		return fmt.Errorf("line %d: %q is not an ARC line (start count ignored ignored)", line, text)
	}
	start, err := strconv.ParseInt(fields[0], 10, 64)
	if err != nil {
		return fmt.Errorf("line %d: ARC start %q is not an integer", line, fields[0])
	}
	count, err := strconv.Atoi(fields[1])
	if err != nil || count < 0 || count > maxRun {
		return fmt.Errorf("line %d: ARC count %q is not an integer from 0 to %d", line, fields[1], maxRun)
	}
	for i := range int64(count) {
		if err := fn(strconv.FormatInt(start+i, 10)); err != nil {
			return err
		}
	}
	return nil
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
