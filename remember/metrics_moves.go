package remember

import "github.com/prometheus/client_golang/prometheus"

// MoveLoad is what this member does about moves of replica sets now.
type MoveLoad struct {
	// Running are the moves it runs (as a unit's host or caretaker); at most MaxMoves.
	Running int
	// Queued are the moves waiting for a slot.
	Queued int
	// MaxMoves is the bound of Running (sharding.store.max-simultaneous-moves).
	MaxMoves int
}

// MoveLoad reports the moves this machine runs and those waiting for a slot.
func (m *Machine) MoveLoad() MoveLoad {
	l := MoveLoad{Running: len(m.moves), MaxMoves: m.cfg.MaxMoves}
	for _, us := range m.units {
		if us.queued {
			l.Queued++
		}
	}
	return l
}

// MoveLoad reports the moves this member runs and those waiting for a slot (zero once
// the store is closed).
func (s *Store) MoveLoad() MoveLoad {
	var l MoveLoad
	s.onLoop(func() { l = s.m.MoveLoad() })
	return l
}

// moveMetrics are the metrics of the moves of replica sets: counters from Stats, gauges
// from MoveLoad (read on the store's loop at each scrape).
func moveMetrics(s *Store) []prometheus.Collector {
	counter := func(name, help string, v func(Stats) uint64) prometheus.Collector {
		return prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help}, func() float64 { return float64(v(s.Stats())) })
	}
	gauge := func(name, help string, v func(MoveLoad) int) prometheus.Collector {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, func() float64 { return float64(v(s.MoveLoad())) })
	}
	return []prometheus.Collector{
		counter("shardmesh_store_moves_started_total", "Moves of replica sets this member started, as a shard's host or caretaker (a failed move started again counts again).",
			func(st Stats) uint64 { return st.MovesStarted }),
		counter("shardmesh_store_moves_finished_total", "Moves of replica sets this member finished: the new set stored alone.",
			func(st Stats) uint64 { return st.Moves }),
		counter("shardmesh_store_moves_failed_total", "Moves of replica sets that failed a step (tried again after a while).",
			func(st Stats) uint64 { return st.MovesFailed }),
		counter("shardmesh_store_moves_abandoned_total", "Moves of replica sets given up because the shard's host changed (its next host finishes them).",
			func(st Stats) uint64 { return st.Abandoned }),
		counter("shardmesh_store_move_records_copied_total", "Records, tombstones and fence floors copied to new replicas by moves.",
			func(st Stats) uint64 { return st.Copied }),
		gauge("shardmesh_store_moves_in_progress", "Moves of replica sets this member runs now (at most sharding.store.max-simultaneous-moves).",
			func(l MoveLoad) int { return l.Running }),
		gauge("shardmesh_store_moves_queued", "Moves of replica sets waiting for a slot on this member.",
			func(l MoveLoad) int { return l.Queued }),
	}
}
