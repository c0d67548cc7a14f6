package mailbox

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestFifoMatchesSlice drives a fifo with random pushes and pops (runs of each, so that it
// crosses segment boundaries, empties, and refills through the inline slot) and checks it
// against a slice.
func TestFifoMatchesSlice(t *testing.T) {
	g := newGroup[int](t, nil, GroupConfig{SegmentSize: 3})
	r := rand.New(rand.NewPCG(1, 2))
	var q fifo[int]
	var model []int
	next := 0
	for step := range 20_000 {
		if r.IntN(2) == 0 {
			for range r.IntN(8) {
				q.push(g, next)
				model = append(model, next)
				next++
			}
		} else {
			for range r.IntN(8) {
				if len(model) == 0 {
					break
				}
				if got := q.pop(g); got != model[0] {
					t.Fatalf("step %d: pop = %d, want %d", step, got, model[0])
				}
				model = model[1:]
			}
		}
		if int(q.n) != len(model) {
			t.Fatalf("step %d: n = %d, want %d", step, q.n, len(model))
		}
		if r.IntN(50) == 0 {
			if got := q.drain(g); !slices.Equal(got, model) {
				t.Fatalf("step %d: drain = %v, want %v", step, got, model)
			}
			model = nil
			if q.head != nil || q.tail != nil || q.inline {
				t.Fatalf("step %d: drained fifo still holds storage", step)
			}
		}
	}
}
