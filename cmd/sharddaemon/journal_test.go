package main

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// Records of concurrent entities land as whole lines, stamped with the process and both
// clocks; the monotonic stamps of one writer never go back.
func TestJournalRecordsWholeLines(t *testing.T) {
	path := filepath.Join(t.TempDir(), "journal")
	j, err := openJournal(path)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			for i := range 200 {
				if err := j.record(JournalRecord{Event: "ack", Type: "counter", Entity: "c", Node: "n", Epoch: uint64(w), Value: int64(i)}); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	n := 0
	last := map[uint64]int64{}
	for sc.Scan() {
		var r JournalRecord
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("line %d is not a whole record: %q", n+1, sc.Text())
		}
		if r.PID != os.Getpid() || r.Mono == 0 || r.Wall == 0 {
			t.Fatalf("record not stamped: %+v", r)
		}
		if r.Mono < last[r.Epoch] {
			t.Fatalf("monotonic stamp went back: %+v", r)
		}
		last[r.Epoch] = r.Mono
		n++
	}
	if n != 8*200 {
		t.Fatalf("%d records, want %d", n, 8*200)
	}
}

func TestJournalNilAndBadPath(t *testing.T) {
	var j *journal
	if err := j.record(JournalRecord{Event: "start"}); err != nil {
		t.Fatalf("a nil journal records nothing: %v", err)
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := openJournal(filepath.Join(t.TempDir(), "no", "such", "dir", "j")); err == nil {
		t.Fatal("a journal in a missing directory opened")
	}
}
