package sim

import (
	"math/rand/v2"
	"time"
)

// Network decides the fate of each message: whether it arrives, how late, and how many times.
type Network struct {
	// MinLatency and MaxLatency bound the one-way delay, drawn uniformly; different delays
	// reorder messages.
	MinLatency, MaxLatency time.Duration
	// Loss is the probability that a message is dropped.
	Loss float64
	// Duplicate is the probability that a message is delivered twice.
	Duplicate float64

	group   map[int]int     // node index → partition group; nodes in different groups cannot talk
	blocked map[[2]int]bool // one-way cuts: from → to
}

func newNetwork() *Network {
	return &Network{
		MinLatency: 200 * time.Microsecond,
		MaxLatency: 2 * time.Millisecond,
		group:      map[int]int{},
		blocked:    map[[2]int]bool{},
	}
}

// connected reports whether a message from node a can reach node b now.
func (n *Network) connected(a, b int) bool {
	return n.group[a] == n.group[b] && !n.blocked[[2]int{a, b}]
}

// Partition splits the nodes into groups; nodes not listed form one more group together.
func (n *Network) Partition(groups ...[]int) {
	clear(n.group)
	for g, nodes := range groups {
		for _, i := range nodes {
			n.group[i] = g + 1
		}
	}
}

// Heal removes every partition and one-way cut.
func (n *Network) Heal() {
	clear(n.group)
	clear(n.blocked)
}

// Cut blocks messages from a to b (one way).
func (n *Network) Cut(a, b int) { n.blocked[[2]int{a, b}] = true }

// deliveries returns the delays after which a message sent now arrives: none when lost,
// two when duplicated.
func (n *Network) deliveries(r *rand.Rand) []time.Duration {
	if n.Loss > 0 && r.Float64() < n.Loss {
		return nil
	}
	d := []time.Duration{n.latency(r)}
	if n.Duplicate > 0 && r.Float64() < n.Duplicate {
		d = append(d, n.latency(r))
	}
	return d
}

func (n *Network) latency(r *rand.Rand) time.Duration {
	if n.MaxLatency <= n.MinLatency {
		return n.MinLatency
	}
	return n.MinLatency + time.Duration(r.Int64N(int64(n.MaxLatency-n.MinLatency)))
}
