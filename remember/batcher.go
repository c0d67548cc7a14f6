package remember

import (
	"context"
	"sync"
)

// batcher groups operations into rounds: at most window rounds are in flight; while they
// are, new operations queue up and the next round takes them all (up to what fits). Under
// light load an operation starts its round at once; under heavy load rounds grow, so the
// cost of a round (a commit with fsync, a frame per peer) is shared by many operations.
type batcher[T any] struct {
	mu     sync.Mutex
	queue  []T
	closed bool
	wake   chan struct{} // buffered 1: queue became non-empty
	slots  chan struct{} // a token per round in flight
	weigh  func(T) (n, bytes int)
	fail   func(T, error)
}

// newBatcher returns a batcher of window rounds in flight whose rounds hold at most
// maxBatchWrites items and maxBatchBytes bytes as weigh counts them (and at least one
// operation).
func newBatcher[T any](window int, weigh func(T) (n, bytes int), fail func(T, error)) *batcher[T] {
	return &batcher[T]{wake: make(chan struct{}, 1), slots: make(chan struct{}, window), weigh: weigh, fail: fail}
}

// add queues op; after close it fails op with ErrClosed instead.
func (b *batcher[T]) add(op T) {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		b.fail(op, ErrClosed)
		return
	}
	b.queue = append(b.queue, op)
	b.mu.Unlock()
	select {
	case b.wake <- struct{}{}:
	default:
	}
}

// run starts rounds until ctx ends: start gets each batch and a release function to call
// (once) when the round is over. When ctx ends, queued operations fail with ErrClosed.
func (b *batcher[T]) run(ctx context.Context, start func(batch []T, release func())) {
	defer b.close()
	for {
		select {
		case b.slots <- struct{}{}:
		case <-ctx.Done():
			return
		}
		batch := b.next(ctx)
		if batch == nil {
			return
		}
		var once sync.Once
		start(batch, func() { once.Do(func() { <-b.slots }) })
	}
}

// next waits for queued operations and takes those that fit one round.
func (b *batcher[T]) next(ctx context.Context) []T {
	for {
		b.mu.Lock()
		if len(b.queue) > 0 {
			items, bytes := b.weigh(b.queue[0])
			n := 1
			for ; n < len(b.queue); n++ {
				i, by := b.weigh(b.queue[n])
				if items+i > maxBatchWrites || bytes+by > maxBatchBytes {
					break
				}
				items, bytes = items+i, bytes+by
			}
			batch := append([]T(nil), b.queue[:n]...)
			rest := copy(b.queue, b.queue[n:])
			clear(b.queue[rest:])
			b.queue = b.queue[:rest]
			b.mu.Unlock()
			return batch
		}
		b.mu.Unlock()
		select {
		case <-b.wake:
		case <-ctx.Done():
			return nil
		}
	}
}

func (b *batcher[T]) close() {
	b.mu.Lock()
	b.closed = true
	queued := b.queue
	b.queue = nil
	b.mu.Unlock()
	for _, op := range queued {
		b.fail(op, ErrClosed)
	}
}
