package remember

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// Sentinel errors; the errors returned wrap them with context. Test with errors.Is.
var (
	// ErrFenced: a write's epoch is below the key's fence floor or below the epoch of the
	// record a replica holds: a newer owner of the key has fenced the writer off. The error
	// is a *FencedError naming the key and the epochs.
	ErrFenced = errors.New("write fenced off")

	// ErrNoQuorum: too few replicas answered within Config.Timeout. The error is a
	// *QuorumError naming how many answered, how many were needed and who did not answer.
	ErrNoQuorum = errors.New("no quorum")

	// ErrSpansUnits: a Scan of a prefix whose keys belong to several units (several
	// shards' replica sets): ScanAll reads those.
	ErrSpansUnits = errors.New("the prefix spans several replica sets: read it with ScanAll")

	// ErrNoPlacement: the store has no placement yet (its member has not joined a cluster),
	// so it does not know which members hold the metadata; the call may be tried again.
	ErrNoPlacement = errors.New("no placement yet: this member has not joined a cluster, so it does not know which members hold the metadata")

	// ErrClosed: the store is closed.
	ErrClosed = errors.New("store closed")

	// ErrInUse: the store's directory is held by another process (or another Store or
	// Local in this one): Badger's directory lock.
	ErrInUse = errors.New("store directory in use")

	// ErrTooLarge: a key, value or Write call exceeds the limits (MaxKeySize,
	// MaxValueSize, MaxWriteBytes, MaxWrites).
	ErrTooLarge = errors.New("too large")

	// ErrStaleConfig: a replica refused a write routed by a replica configuration that no
	// longer names it (it dropped its copy of the unit under a later one: dropfence.go).
	// Only a replica's answer carries it; the write's quorum counts it as that replica's
	// failure.
	ErrStaleConfig = errors.New("stale replica configuration")
)

// FencedError is the ErrFenced of a write of Key with Epoch that a replica refused because
// it only accepts epochs from Need on (the key's fence floor, or the epoch of its record).
type FencedError struct {
	Key   string
	Epoch uint64
	Need  uint64
}

func (e *FencedError) Error() string {
	return fmt.Sprintf("remember: write of %q with epoch %d refused: a replica accepts only epoch %d or later (the key is fenced by a newer owner): %v",
		e.Key, e.Epoch, e.Need, ErrFenced)
}

// Unwrap makes errors.Is(err, ErrFenced) hold.
func (e *FencedError) Unwrap() error { return ErrFenced }

// QuorumError is the ErrNoQuorum of an operation that Got answers of the Need it required
// from the N replicas it asked. Missing are the replicas that did not answer; Failed those
// that answered with an error, which Cause holds (the first one).
type QuorumError struct {
	Op      string // "write", "read", "scan", "fenced read"
	Key     string // the (first) key, or the scanned prefix
	Unit    string // the unit whose replica set missed its majority (Unit.String)
	Got     int
	Need    int
	N       int
	Timeout time.Duration // how long it waited for Missing; 0: it failed before they answered
	Missing []NodeID
	Failed  []NodeID
	// Refilling are replicas that answered ErrRefilling and did not count (a read): Need
	// is a majority of N less those of them its set may do without (quorum.decideReading).
	Refilling []NodeID
	Cause     error
}

func (e *QuorumError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "remember: %s of %q", e.Op, e.Key)
	if e.Unit != "" {
		fmt.Fprintf(&b, " (replica set of %s)", e.Unit)
	}
	fmt.Fprintf(&b, ": %d of %d replicas answered, %d needed: %v", e.Got, e.N, e.Need, ErrNoQuorum)
	switch {
	case len(e.Missing) > 0 && e.Timeout > 0:
		fmt.Fprintf(&b, "; no answer within %v from %s", e.Timeout, peerList(e.Missing))
	case len(e.Missing) > 0:
		fmt.Fprintf(&b, "; it failed before %s answered", peerList(e.Missing))
	}
	if len(e.Refilling) > 0 {
		fmt.Fprintf(&b, "; not counted: %s (%v)", peerList(e.Refilling), ErrRefilling)
	}
	if len(e.Failed) > 0 {
		fmt.Fprintf(&b, "; failed on %s", peerList(e.Failed))
		if e.Cause != nil {
			fmt.Fprintf(&b, " (%v)", e.Cause)
		}
	}
	return b.String()
}

// Unwrap makes errors.Is(err, ErrNoQuorum) hold, and errors.Is and errors.As see Cause (a
// *DiskFullError of this replica, …).
func (e *QuorumError) Unwrap() []error {
	if e.Cause == nil {
		return []error{ErrNoQuorum}
	}
	return []error{ErrNoQuorum, e.Cause}
}

func peerList(ids []NodeID) string {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = string(id)
	}
	return strings.Join(s, ", ")
}
