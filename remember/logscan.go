package remember

import (
	"encoding/binary"
	"hash/crc32"
	"math"
	"strconv"
)

// Badger's log files — the write-ahead memtables (.mem) and the value log (.vlog) — hold a
// 20-byte header (the encryption key id and an IV) and then entries:
//
//	header (meta, user meta, then uvarints: key length, value length, expiry) | key | value | CRC-32C
//
// Entries of a transaction carry bitTxn and the commit timestamp in their keys' last 8
// bytes; a bitFinTxn entry whose value is that timestamp in decimal commits them. Badger
// replays a log up to the first entry that does not read or does not fit the transaction
// it is in, and silently drops the rest. scanLog reads a log the same way and then looks
// beyond that point for committed entries: acknowledged writes that a replay would drop.

// Constants of Badger's log format (badger/v4 value.go, structs.go, memtable.go).
const (
	logHeaderSize = 20
	logBitTxn     = 1 << 6
	logBitFinTxn  = 1 << 7
	logMaxKeyLen  = 1 << 16
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// logScan is what scanLog found in a log file.
type logScan struct {
	keyID     uint64 // the header's encryption key id (0: plain)
	validEnd  int    // where Badger's replay stops: just after the last committed entry
	parsedEnd int    // where the entries stop reading (a bad or a zero entry, or the end)
	committed int    // committed entries before validEnd
	minTs     uint64 // the lowest and highest commit timestamps before validEnd (0: none)
	maxTs     uint64
	lost      int // committed entries after validEnd: what a replay would drop
	lostAt    int // the offset of the first of them
	nonZero   int // the offset just after the last byte that is not zero
}

// logEntry is one entry as scanLog reads it.
type logEntry struct {
	meta       byte
	key, value []byte
	size       int
}

// readLogEntry reads the entry at data[off:], or reports that none reads there.
func readLogEntry(data []byte, off int) (logEntry, bool) {
	b := data[off:]
	if len(b) < 2 {
		return logEntry{}, false
	}
	n := 2
	klen, c := binary.Uvarint(b[n:])
	if c <= 0 {
		return logEntry{}, false
	}
	n += c
	vlen, c := binary.Uvarint(b[n:])
	if c <= 0 {
		return logEntry{}, false
	}
	n += c
	if _, c = binary.Uvarint(b[n:]); c <= 0 {
		return logEntry{}, false
	}
	n += c
	if klen == 0 || klen > logMaxKeyLen || vlen > math.MaxUint32 || uint64(len(b)-n) < klen+vlen+crc32.Size {
		return logEntry{}, false
	}
	end := n + int(klen) + int(vlen)
	if crc32.Checksum(b[:end], castagnoli) != binary.BigEndian.Uint32(b[end:]) {
		return logEntry{}, false
	}
	return logEntry{meta: b[0], key: b[n : n+int(klen)], value: b[n+int(klen) : end], size: end + crc32.Size}, true
}

// logTs is the timestamp in a key's last 8 bytes (y.ParseTs).
func logTs(key []byte) uint64 {
	if len(key) <= 8 {
		return 0
	}
	return math.MaxUint64 - binary.BigEndian.Uint64(key[len(key)-8:])
}

// txnReplay follows the transactions of a run of entries as Badger's replay does.
type txnReplay struct {
	open       uint64 // the timestamp of the transaction in progress (0: none)
	pending    int
	minT, maxT uint64
}

// step takes the next entry; committed is how many entries it committed, ok is false where
// a replay stops.
func (r *txnReplay) step(e logEntry) (committed int, ok bool) {
	switch {
	case e.meta&logBitTxn != 0:
		ts := logTs(e.key)
		if r.open == 0 {
			r.open = ts
		}
		if r.open != ts {
			return 0, false
		}
		r.pending++
		return 0, true
	case e.meta&logBitFinTxn != 0:
		ts, err := strconv.ParseUint(string(e.value), 10, 64)
		if err != nil || r.open != ts {
			return 0, false
		}
		r.note(ts)
		n := r.pending
		r.open, r.pending = 0, 0
		return n, true
	default:
		if r.open != 0 {
			return 0, false
		}
		r.note(logTs(e.key))
		return 1, true
	}
}

func (r *txnReplay) note(ts uint64) {
	if ts == 0 {
		return
	}
	if r.minT == 0 || ts < r.minT {
		r.minT = ts
	}
	r.maxT = max(r.maxT, ts)
}

// scanLog reads a log file's bytes (see the top of this file). It never panics, whatever
// data holds.
func scanLog(data []byte) logScan {
	var s logScan
	for i := len(data) - 1; i >= 0; i-- {
		if data[i] != 0 {
			s.nonZero = i + 1
			break
		}
	}
	if len(data) < logHeaderSize {
		s.validEnd, s.parsedEnd = len(data), len(data)
		return s
	}
	s.keyID = binary.BigEndian.Uint64(data)
	off := logHeaderSize
	s.validEnd = off
	var r txnReplay
	for {
		e, ok := readLogEntry(data, off)
		if !ok {
			break
		}
		n, fits := r.step(e)
		if !fits {
			break
		}
		off += e.size
		if e.meta&logBitTxn == 0 { // a commit, or an entry outside transactions
			s.committed += n
			s.validEnd = off
		}
	}
	s.parsedEnd = off
	s.minTs, s.maxTs = r.minT, r.maxT
	// Beyond the replay's end: resynchronise byte by byte (skipping zeros) and follow the
	// transactions found there.
	var after txnReplay
	for p := s.validEnd; p < s.nonZero; {
		if p+2 < len(data) && data[p+2] == 0 { // a key length of 0: no entry starts here
			p++
			continue
		}
		e, ok := readLogEntry(data, p)
		if !ok {
			p++
			continue
		}
		n, fits := after.step(e)
		if !fits {
			after = txnReplay{}
			if n, fits = after.step(e); !fits {
				p++
				continue
			}
		}
		if n > 0 && s.lost == 0 {
			s.lostAt = p
		}
		s.lost += n
		p += e.size
	}
	return s
}
