package remember

import (
	"encoding/binary"
	"hash/crc32"
	"math"
	"strconv"
	"testing"
)

// logBuilder writes Badger's log format (see logscan.go), as Badger's logFile.encodeEntry
// does.
type logBuilder struct {
	data []byte
	ends []int // the offset after each transaction's commit entry
}

func newLogBuilder() *logBuilder { return &logBuilder{data: make([]byte, logHeaderSize)} }

func (b *logBuilder) entry(meta byte, key, value []byte) {
	var h [22]byte
	h[0] = meta
	n := 2
	n += binary.PutUvarint(h[n:], uint64(len(key)))
	n += binary.PutUvarint(h[n:], uint64(len(value)))
	n += binary.PutUvarint(h[n:], 0)
	start := len(b.data)
	b.data = append(b.data, h[:n]...)
	b.data = append(b.data, key...)
	b.data = append(b.data, value...)
	b.data = binary.BigEndian.AppendUint32(b.data, crc32.Checksum(b.data[start:], castagnoli))
}

// txn writes a committed transaction of n entries at timestamp ts.
func (b *logBuilder) txn(ts uint64, n int) {
	for i := range n {
		b.entry(logBitTxn, keyTs("key"+strconv.Itoa(i), ts), []byte("value"))
	}
	b.entry(logBitFinTxn, keyTs("!badger!txn", ts), []byte(strconv.FormatUint(ts, 10)))
	b.ends = append(b.ends, len(b.data))
}

func keyTs(key string, ts uint64) []byte {
	return binary.BigEndian.AppendUint64([]byte(key), math.MaxUint64-ts)
}

func TestScanLogReadsWhatBadgerReplays(t *testing.T) {
	b := newLogBuilder()
	for ts := uint64(1); ts <= 5; ts++ {
		b.txn(ts, 3)
	}
	clean := append(append([]byte(nil), b.data...), make([]byte, 4096)...) // as created: zeros after
	s := scanLog(clean)
	if s.validEnd != len(b.data) || s.parsedEnd != len(b.data) || s.committed != 15 || s.minTs != 1 || s.maxTs != 5 || s.lost != 0 || s.nonZero != len(b.data) {
		t.Fatalf("clean log: %+v (entries end at %d)", s, len(b.data))
	}

	// A transaction cut short by a crash (no commit entry), then zeros: not lost, not damage.
	torn := append([]byte(nil), b.data...)
	tb := &logBuilder{data: torn}
	tb.entry(logBitTxn, keyTs("half", 6), []byte("v"))
	tb.data = append(tb.data, make([]byte, 100)...)
	if s := scanLog(tb.data); s.validEnd != len(b.data) || s.lost != 0 {
		t.Fatalf("torn tail: %+v", s)
	}

	// Garbled in the first entry of the third transaction: the replay stops there; its two
	// other entries (committed by its commit entry) and the two transactions after it are
	// what it would drop.
	garbled := append([]byte(nil), clean...)
	for i := b.ends[1] + 3; i < b.ends[1]+9; i++ {
		garbled[i] ^= 0x5a
	}
	s = scanLog(garbled)
	if s.validEnd != b.ends[1] || s.lost != 2+3+3 || s.lostAt <= b.ends[1] || s.lostAt >= b.ends[2] {
		t.Fatalf("garbled: %+v (third transaction ends at %d)", s, b.ends[2])
	}

	// Truncated within the last commit entry.
	s = scanLog(b.data[:len(b.data)-2])
	if s.validEnd != b.ends[3] || s.parsedEnd >= len(b.data)-2 || s.lost != 0 {
		t.Fatalf("truncated: %+v", s)
	}
}

func TestScanLogInterleavedTransaction(t *testing.T) {
	b := newLogBuilder()
	b.txn(1, 2)
	b.entry(logBitTxn, keyTs("a", 2), nil)
	b.entry(logBitTxn, keyTs("b", 3), nil) // another timestamp inside a transaction: replay stops
	b.entry(logBitFinTxn, keyTs("!badger!txn", 3), []byte("3"))
	s := scanLog(b.data)
	if s.validEnd != b.ends[0] || s.lost != 1 {
		t.Fatalf("interleaved: %+v", s)
	}
}

func FuzzScanLog(f *testing.F) {
	b := newLogBuilder()
	b.txn(7, 2)
	b.txn(8, 1)
	f.Add(b.data)
	f.Add([]byte{})
	f.Add(make([]byte, 64))
	f.Fuzz(func(t *testing.T, data []byte) {
		s := scanLog(data)
		if s.validEnd > len(data) || s.parsedEnd > len(data) || s.validEnd > s.parsedEnd || s.nonZero > len(data) || s.lost < 0 {
			t.Fatalf("scanLog(%d bytes) = %+v", len(data), s)
		}
	})
}
