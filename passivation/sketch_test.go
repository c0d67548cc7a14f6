package passivation

import (
	"fmt"
	"testing"
)

func TestSketchCountsAndSaturates(t *testing.T) {
	for _, bits := range []int{2, 4, 8, 16, 32, 64} {
		s := newFrequencySketch(1000, SketchSettings{Depth: 4, CounterBits: bits, WidthMultiplier: 4, ResetMultiplier: 1e6})
		for range 20 {
			s.increment(42)
		}
		want := 20
		if bits < 8 {
			want = min(20, 1<<bits-1)
		}
		if got := s.frequency(42); got != want {
			t.Errorf("%d-bit counters: frequency after 20 increments = %d, want %d", bits, got, want)
		}
		if got := s.frequency(43); got != 0 {
			t.Errorf("%d-bit counters: frequency of an unseen key = %d", bits, got)
		}
	}
}

func TestSketchEstimatesAreCloseForDistinctKeys(t *testing.T) {
	// 1,000 keys counted k mod 8 times each, in a sketch sized for 1,000: the count-min
	// estimate never undercounts and rarely overcounts.
	s := newFrequencySketch(1000, SketchSettings{Depth: 4, CounterBits: 4, WidthMultiplier: 4, ResetMultiplier: 1e6})
	for k := range uint32(1000) {
		for range k % 8 {
			s.increment(StringHash(fmt.Sprintf("entity-%d", k)))
		}
	}
	off := 0
	for k := range uint32(1000) {
		got := s.frequency(StringHash(fmt.Sprintf("entity-%d", k)))
		if got < int(k%8) {
			t.Fatalf("key %d: estimate %d below its count %d", k, got, k%8)
		}
		if got != int(k%8) {
			off++
		}
	}
	if off > 50 {
		t.Fatalf("%d of 1,000 estimates are off", off)
	}
}

func TestSketchResetHalves(t *testing.T) {
	// Capacity 10 with reset multiplier 1: after 10 effective increments all counters halve.
	s := newFrequencySketch(10, SketchSettings{Depth: 4, CounterBits: 4, WidthMultiplier: 4, ResetMultiplier: 1})
	for range 7 {
		s.increment(1)
	}
	s.increment(2)
	s.increment(2)
	if s.frequency(1) != 7 || s.frequency(2) != 2 {
		t.Fatalf("before the reset: %d, %d", s.frequency(1), s.frequency(2))
	}
	s.increment(3) // the tenth increment
	if got := [3]int{s.frequency(1), s.frequency(2), s.frequency(3)}; got != [3]int{3, 1, 0} {
		t.Fatalf("after the reset: %v, want [3 1 0]", got)
	}
	if s.size != 4 {
		t.Fatalf("size after the reset = %d, want 4 (the halved sum of a row)", s.size)
	}
}

func TestSketchDepthOne(t *testing.T) {
	s := newFrequencySketch(4, SketchSettings{Depth: 1, CounterBits: 2, WidthMultiplier: 1, ResetMultiplier: 100})
	s.increment(5)
	if s.frequency(5) != 1 {
		t.Fatalf("frequency = %d", s.frequency(5))
	}
}

func TestCeilingPowerOfTwo(t *testing.T) {
	for in, want := range map[int]int{0: 1, 1: 1, 2: 2, 3: 4, 25: 32, 1024: 1024, 100_000: 131072} {
		if got := ceilingPowerOfTwo(in); got != want {
			t.Errorf("ceilingPowerOfTwo(%d) = %d, want %d", in, got, want)
		}
	}
}
