package passivation

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// The replacement policies are checked against naive models written straight from the
// policies' definitions (slices scanned in O(n)), on random traces: every access must
// passivate exactly the entities the model passivates, in the same order.

// model is a naive replacement policy: access returns the passivated keys.
type model interface {
	access(k int) []int
	setLimit(n int) []int
}

// lruModel keeps keys from least to most recent.
type lruModel struct {
	keys  []int
	limit int
	mru   bool
}

func (m *lruModel) access(k int) []int {
	if i := slices.Index(m.keys, k); i >= 0 {
		m.keys = append(slices.Delete(m.keys, i, i+1), k)
		return nil
	}
	m.keys = append(m.keys, k)
	var out []int
	for len(m.keys) > m.limit {
		if m.mru {
			at := max(len(m.keys)-2, 0) // the one used before k, or k if it is alone
			out = append(out, m.keys[at])
			m.keys = slices.Delete(m.keys, at, at+1)
		} else {
			out = append(out, m.keys[0])
			m.keys = m.keys[1:]
		}
	}
	return out
}

func (m *lruModel) setLimit(n int) []int {
	m.limit = n
	var out []int
	for len(m.keys) > m.limit {
		if m.mru {
			out = append(out, m.keys[len(m.keys)-1])
			m.keys = m.keys[:len(m.keys)-1]
		} else {
			out = append(out, m.keys[0])
			m.keys = m.keys[1:]
		}
	}
	return out
}

// slruModel keeps one recency-ordered slice per segment.
type slruModel struct {
	segs        [][]int
	proportions []float64
	limits      []int
	limit       int
}

func (m *slruModel) divide(limit int) {
	m.limit = limit
	m.limits = make([]int, len(m.proportions))
	rest := limit
	for k := 1; k < len(m.proportions); k++ {
		m.limits[k] = int(m.proportions[k] * float64(limit))
		rest -= m.limits[k]
	}
	m.limits[0] = rest
}

func (m *slruModel) size() int {
	n := 0
	for _, s := range m.segs {
		n += len(s)
	}
	return n
}

func (m *slruModel) demote(level int) {
	for len(m.segs[level]) > m.limits[level] {
		k := m.segs[level][0]
		m.segs[level] = m.segs[level][1:]
		m.segs[level-1] = append(m.segs[level-1], k)
	}
}

func (m *slruModel) evict() []int {
	if m.size() <= m.limit {
		return nil
	}
	for level := len(m.segs) - 1; level > 0; level-- {
		m.demote(level)
	}
	var out []int
	for m.size() > m.limit && len(m.segs[0]) > 0 {
		out = append(out, m.segs[0][0])
		m.segs[0] = m.segs[0][1:]
	}
	return out
}

func (m *slruModel) access(k int) []int {
	for level, seg := range m.segs {
		if i := slices.Index(seg, k); i >= 0 {
			m.segs[level] = slices.Delete(seg, i, i+1)
			if level == len(m.segs)-1 {
				m.segs[level] = append(m.segs[level], k)
			} else {
				m.segs[level+1] = append(m.segs[level+1], k)
				m.demote(level + 1)
			}
			return nil
		}
	}
	m.segs[0] = append(m.segs[0], k)
	return m.evict()
}

func (m *slruModel) setLimit(n int) []int {
	m.divide(n)
	return m.evict()
}

// lfuModel scans for the lowest priority, the least recently bucketed first.
type lfuModel struct {
	items map[int]*lfuItem
	limit int
	aging bool
	age   int64
	clock int
}

type lfuItem struct {
	accesses, priority int64
	since              int // when it entered its priority
}

func (m *lfuModel) victim() int {
	best, found := 0, false
	for k, it := range m.items {
		if !found || it.priority < m.items[best].priority ||
			it.priority == m.items[best].priority && it.since < m.items[best].since {
			best, found = k, true
		}
	}
	return best
}

func (m *lfuModel) evictOne() int {
	v := m.victim()
	if m.aging {
		m.age = m.items[v].priority
	}
	delete(m.items, v)
	return v
}

func (m *lfuModel) access(k int) []int {
	m.clock++
	if it, ok := m.items[k]; ok {
		it.accesses++
		it.priority = it.accesses
		if m.aging {
			it.priority += m.age
		}
		it.since = m.clock
		return nil
	}
	var out []int
	for excess := len(m.items) - m.limit + 1; excess > 0 && len(m.items) > 0; excess-- {
		out = append(out, m.evictOne())
	}
	if m.limit == 0 {
		return append(out, k)
	}
	it := &lfuItem{accesses: 1, priority: 1, since: m.clock}
	if m.aging {
		it.priority += m.age
	}
	m.items[k] = it
	return out
}

func (m *lfuModel) setLimit(n int) []int {
	m.limit = n
	var out []int
	for len(m.items) > m.limit {
		out = append(out, m.evictOne())
	}
	return out
}

func TestPoliciesMatchNaiveModels(t *testing.T) {
	cases := []struct {
		name     string
		policy   PolicySettings
		newModel func(limit int) model
	}{
		{"LRU", LRU(), func(l int) model { return &lruModel{limit: l} }},
		{"MRU", MRU(), func(l int) model { return &lruModel{limit: l, mru: true} }},
		{"SLRU", SegmentedLRU(0.2, 0.8), func(l int) model {
			m := &slruModel{segs: make([][]int, 2), proportions: []float64{0.2, 0.8}}
			m.divide(l)
			return m
		}},
		{"S4LRU", EvenlySegmentedLRU(4), func(l int) model {
			m := &slruModel{segs: make([][]int, 4), proportions: []float64{0.25, 0.25, 0.25, 0.25}}
			m.divide(l)
			return m
		}},
		{"LFU", LFU(false), func(l int) model { return &lfuModel{items: map[int]*lfuItem{}, limit: l} }},
		{"LFUDA", LFU(true), func(l int) model { return &lfuModel{items: map[int]*lfuItem{}, limit: l, aging: true} }},
	}
	for _, c := range cases {
		for _, limit := range []int{0, 1, 7, 40} {
			t.Run(fmt.Sprintf("%s/limit=%d", c.name, limit), func(t *testing.T) {
				r := rand.New(rand.NewPCG(uint64(limit), 42))
				// a limit of 0 in settings means no limit; a share of 0 comes from SetLimit
				p, err := NewPolicy[int](Limited(limit+1, c.policy), nil)
				if err != nil {
					t.Fatal(err)
				}
				p.SetLimit(limit, nil)
				m := c.newModel(limit)
				now := time.Unix(0, 0)
				var got []int
				for step := range 20_000 {
					if step%2500 == 2499 { // the share changes now and then
						n := r.IntN(2*limit + 2)
						got = p.SetLimit(n, got[:0])
						if want := m.setLimit(n); !slices.Equal(got, want) {
							t.Fatalf("step %d: SetLimit(%d) passivated %v, model %v", step, n, got, want)
						}
						continue
					}
					// a skewed key space: some keys are hot, many are cold
					k := int(r.ExpFloat64() * float64(limit))
					got = p.Access(k, now, got[:0])
					if want := m.access(k); !slices.Equal(got, want) {
						t.Fatalf("step %d: Access(%d) passivated %v, model %v", step, k, got, want)
					}
				}
				if p.Len() > p.Limit() {
					t.Fatalf("%d active entities over a limit of %d", p.Len(), p.Limit())
				}
			})
		}
	}
}
