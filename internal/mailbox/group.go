package mailbox

import (
	"fmt"
	"sync"
	"unsafe"
)

// GroupConfig configures a Group.
type GroupConfig struct {
	// Capacity bounds each mailbox of the group: Enqueue returns ErrFull while this many
	// messages are queued (not counting the one being handled, nor Do and DoFirst functions).
	// Default 0: unbounded.
	Capacity int
	// SegmentSize is how many messages one storage segment holds. Default: as many as fit
	// in about 256 bytes, at least 4 and at most 64. Larger segments touch the Group's free
	// list less often; smaller ones cost less memory in each busy mailbox.
	SegmentSize int
}

// segmentBytes is the message payload a default-sized segment aims at.
const segmentBytes = 256

// maxSegment is the largest SegmentSize accepted.
const maxSegment = 1 << 16

// Validate fills zero fields with their defaults for messages of size msgSize bytes and
// rejects negative ones.
func (c *GroupConfig) Validate(msgSize uintptr) error {
	if c.Capacity < 0 || uint64(c.Capacity) > maxQueued {
		return fmt.Errorf("mailbox: Capacity %d: must be in [0, %d] (0: unbounded)", c.Capacity, uint64(maxQueued))
	}
	if c.SegmentSize < 0 || c.SegmentSize > maxSegment {
		return fmt.Errorf("mailbox: SegmentSize %d: must be in [0, %d] (0: default)", c.SegmentSize, maxSegment)
	}
	if c.SegmentSize == 0 {
		c.SegmentSize = segmentBytes / max(int(msgSize), 1)
		c.SegmentSize = min(max(c.SegmentSize, 4), 64)
	}
	return nil
}

// Group is what the mailboxes of one entity type share: their Pool, their settings and a
// free list of storage segments for messages of type T.
type Group[T any] struct {
	pool     *Pool
	capacity uint32 // 0: unbounded
	segLen   uint32
	segs     sync.Pool // of *segment[T], empty
}

// NewGroup validates cfg and returns a Group whose mailboxes run on p.
func NewGroup[T any](p *Pool, cfg GroupConfig) (*Group[T], error) {
	var zero T
	if err := cfg.Validate(unsafe.Sizeof(zero)); err != nil {
		return nil, err
	}
	g := &Group[T]{pool: p, capacity: uint32(cfg.Capacity), segLen: uint32(cfg.SegmentSize)}
	g.segs.New = func() any {
		return &segment[T]{slots: make([]T, g.segLen)}
	}
	return g, nil
}

// segment is a fixed-size piece of a mailbox's FIFO; a mailbox's segments form a singly
// linked list from the oldest message to the newest.
type segment[T any] struct {
	next  *segment[T]
	slots []T
}

func (g *Group[T]) getSegment() *segment[T] {
	s, _ := g.segs.Get().(*segment[T])
	return s
}

// putSegment returns s, whose slots hold only zero values, to the free list.
func (g *Group[T]) putSegment(s *segment[T]) {
	s.next = nil
	g.segs.Put(s)
}
