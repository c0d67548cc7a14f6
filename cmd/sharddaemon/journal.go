package main

import (
	"encoding/json"
	"fmt"
	"os"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// journalStop is the stop message the counter gets, when it keeps a journal, before it
// stops for a handoff or a passivation; it is not a command anyone can type by accident.
const journalStop = "\x00journal-stop"

// JournalRecord is one line of an entity journal (--entity-journal): an incarnation started,
// stopped, or acknowledged a change. The chaos checker (e2e/chaos) reads these lines.
type JournalRecord struct {
	// Event is "start" (the incarnation was created), "stop" (it handled its stop message
	// and ends now), "ack" (a change was saved on a quorum; Value is the value after),
	// "unsure" (a reminder's firing failed to save its change, which may have landed anyway),
	// "halt" (the member stopped serving: every incarnation of the process ends; no entity),
	// "lapse" and "serve" (the process stopped or started serving — lost or regained its
	// majority lease, shardmesh.WithServingWatch — so its entities handle nothing in
	// between; no entity, no node: the process is PID).
	Event string `json:"ev"`
	// Type, Entity: the entity.
	Type   string `json:"type"`
	Entity string `json:"id"`
	// Node is the member's peer id; PID the process, so two runs of one member differ.
	Node string `json:"node"`
	PID  int    `json:"pid"`
	// Epoch is the shard's allocation epoch when the incarnation started.
	Epoch uint64 `json:"epoch"`
	// Mono is CLOCK_MONOTONIC in nanoseconds: one clock for every process on a host, never
	// stepped, so records of members on one machine compare. Wall is Unix nanoseconds, for
	// people.
	Mono int64 `json:"mono"`
	Wall int64 `json:"wall"`
	// Value is the counter after an "ack".
	Value int64 `json:"v,omitempty"`
	// Began is CLOCK_MONOTONIC when an "ack"'s save began: the change took effect between
	// Began and Mono (a process paused mid-save records its ack only when it wakes).
	Began int64 `json:"began,omitempty"`
	// Reminder names the durable reminder whose firing made an "ack"'s change (inc-after).
	Reminder string `json:"reminder,omitempty"`
}

// journal appends records to a file, one write per line, so a kill -9 loses at most the
// record being written and lines of concurrent entities never interleave.
type journal struct {
	mu  sync.Mutex
	f   *os.File
	pid int
}

func openJournal(path string) (*journal, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("entity-journal: %w", err)
	}
	return &journal{f: f, pid: os.Getpid()}, nil
}

// monoNow reads CLOCK_MONOTONIC (Go's own monotonic reading counts from process start, so
// it does not compare across processes).
func monoNow() int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		panic(fmt.Sprintf("clock_gettime(CLOCK_MONOTONIC): %v", err))
	}
	return ts.Nano()
}

// record appends r, stamped with the process and both clocks. A nil journal records
// nothing. A failed write is returned: the caller must not acknowledge what it could not
// record, or the checker would miss it.
func (j *journal) record(r JournalRecord) error {
	return j.recordAt(r, time.Time{})
}

// recordAt is record of something that happened at (the zero time: now).
func (j *journal) recordAt(r JournalRecord, at time.Time) error {
	if j == nil {
		return nil
	}
	r.PID = j.pid
	r.Mono = monoNow()
	r.Wall = time.Now().UnixNano()
	if !at.IsZero() {
		ago := time.Since(at)
		r.Mono -= int64(ago)
		r.Wall -= int64(ago)
	}
	line, err := json.Marshal(r)
	if err != nil {
		return err
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if _, err := j.f.Write(append(line, '\n')); err != nil {
		return fmt.Errorf("entity-journal: %w", err)
	}
	return nil
}

func (j *journal) Close() error {
	if j == nil {
		return nil
	}
	return j.f.Close()
}
