package passivation

import "math/bits"

// sketchSeeds are the per-row seeds of the sketch's index function: the first four are
// the large primes of Akka's (and Caffeine's) fast frequency sketch, so that the default
// sketch (depth 4, 4-bit counters) counts exactly as Akka's does; deeper sketches use
// further odd constants.
var sketchSeeds = [...]uint64{
	0xc3a5c85c97cb3127, 0xb492b66fbe98f273, 0x9ae16a3b2f90404f, 0xcbf29ce484222325,
	0x9e3779b97f4a7c15, 0xbf58476d1ce4e5b9, 0x94d049bb133111eb, 0xd6e8feb86659fd93,
	0xff51afd7ed558ccd, 0xc4ceb9fe1a85ec53, 0x87c37b91114253d5, 0x4cf5ad432745937f,
	0x2545f4914f6cdd1d, 0x9fb21c651e98df25, 0xa0761d6478bd642f, 0xe7037ed1a0b428db,
}

// MaxSketchDepth is the largest frequency-sketch depth (number of hash functions).
const MaxSketchDepth = len(sketchSeeds)

// frequencySketch estimates how often each key was seen (a count-min sketch of small
// counters packed in 64-bit words), with TinyLFU's aging: after resetSize increments every
// counter is halved. It counts 32-bit key hashes.
type frequencySketch struct {
	depth        int
	counterBits  uint
	slotShift    uint   // log2(counters per word)
	slotMask     uint32 // counters per word − 1
	counterShift uint   // log2(counterBits)
	counterMask  uint64
	oddMask      uint64 // the low bit of every counter
	resetMask    uint64 // all but the high bit of every counter
	indexMask    uint32 // width − 1
	rowWidth     int    // words per row
	table        []uint64
	rowSizes     []int
	size         int // increments since the last reset, as Akka counts them
	resetSize    int
}

// ceilingPowerOfTwo returns the smallest power of two ≥ n (1 for n ≤ 1).
func ceilingPowerOfTwo(n int) int {
	if n <= 1 {
		return 1
	}
	return 1 << bits.Len32(uint32(n-1))
}

// newFrequencySketch sizes a sketch for a cache of the given capacity: width
// widthMultiplier × the next power of two of capacity counters per row, halved every
// resetMultiplier × capacity increments.
func newFrequencySketch(capacity int, s SketchSettings) *frequencySketch {
	width := s.WidthMultiplier * ceilingPowerOfTwo(capacity)
	counterBits := uint(s.CounterBits)
	slots := 64 / counterBits
	f := &frequencySketch{
		depth:        s.Depth,
		counterBits:  counterBits,
		slotShift:    uint(bits.TrailingZeros(slots)),
		slotMask:     uint32(slots - 1),
		counterShift: uint(bits.TrailingZeros(counterBits)),
		indexMask:    uint32(width - 1),
		rowWidth:     max(1, width/int(slots)),
		resetSize:    int(s.ResetMultiplier * float64(capacity)),
	}
	if counterBits == 64 {
		f.counterMask = 1<<63 - 1
	} else {
		f.counterMask = 1<<counterBits - 1
	}
	for k := range slots {
		f.oddMask |= 1 << (k * counterBits)
		f.resetMask |= (f.counterMask >> 1) << (k * counterBits)
	}
	f.table = make([]uint64, f.depth*f.rowWidth)
	f.rowSizes = make([]int, f.depth)
	return f
}

// rehash spreads a weak hash (such as Java's String.hashCode) over all 32 bits; a low-bias
// mixer found by Hash Function Prospector, as used by Akka.
func rehash(x uint32) uint32 {
	x = ((x >> 15) ^ x) * 0xd168aaad
	x = ((x >> 15) ^ x) * 0xaf723597
	return (x >> 15) ^ x
}

// index returns the counter of a (rehashed) hash in the row with the given seed. The hash
// is sign-extended to 64 bits as Java widens an int to a long.
func (f *frequencySketch) index(hash uint32, seed uint64) uint32 {
	x := (uint64(int64(int32(hash))) + seed) * seed
	return uint32(x+(x>>32)) & f.indexMask
}

// frequency returns the estimated count of a key hash: the smallest of its counters.
func (f *frequencySketch) frequency(keyHash uint32) int {
	h := rehash(keyHash)
	least := ^uint64(0)
	for row := range f.depth {
		i := f.index(h, sketchSeeds[row])
		word := f.table[row*f.rowWidth+int(i>>f.slotShift)]
		slot := (i & f.slotMask) << f.counterShift
		least = min(least, (word>>slot)&f.counterMask)
	}
	return int(min(least, 1<<31-1))
}

// increment counts one more occurrence of a key hash, saturating each counter at its
// maximum, and halves all counters every resetSize effective increments.
func (f *frequencySketch) increment(keyHash uint32) {
	h := rehash(keyHash)
	table, rowWidth, indexMask := f.table, f.rowWidth, f.indexMask
	slotShift, slotMask, counterShift, counterMask := f.slotShift, f.slotMask, f.counterShift, f.counterMask
	updated := false
	for row, base := 0, 0; row < f.depth; row, base = row+1, base+rowWidth {
		seed := sketchSeeds[row]
		x := (uint64(int64(int32(h))) + seed) * seed
		i := uint32(x+(x>>32)) & indexMask
		w := &table[base+int(i>>slotShift)]
		slot := (i & slotMask) << counterShift
		mask := counterMask << slot
		if *w&mask != mask {
			*w += 1 << slot
			f.rowSizes[row]++
			updated = true
		}
	}
	if updated {
		f.size++
		if f.size == f.resetSize {
			f.reset()
		}
	}
}

// reset halves every counter. Integer halving drops half a count from every odd counter,
// which the row sizes account for, so the size afterwards is the exact sum of the halved
// counters of the fullest row.
func (f *frequencySketch) reset() {
	f.size = 0
	for row := range f.depth {
		odd := 0
		words := f.table[row*f.rowWidth : (row+1)*f.rowWidth]
		for c, w := range words {
			odd += bits.OnesCount64(w & f.oddMask)
			words[c] = (w >> 1) & f.resetMask
		}
		f.rowSizes[row] = (f.rowSizes[row] - odd) / 2
		f.size = max(f.size, f.rowSizes[row])
	}
}
