package node

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/shardmesh/shardmesh/coordinator"
	"github.com/shardmesh/shardmesh/datadir"
	"github.com/shardmesh/shardmesh/membership"
	"github.com/shardmesh/shardmesh/remember"
	"github.com/shardmesh/shardmesh/shard"
)

// The placement history: every allocation change a coordinator makes is recorded in the
// replicated store by the member it runs on, under hi␀TYPE␀SHARD␀EPOCH (the epoch in 16 hex
// digits, so a shard's records sort in allocation order), and pruned to
// HistoryConfig.MaxPerShard records per shard and HistoryConfig.Retention. Recording never
// holds the member's loop: records queue for a writer that batches them; when the queue is
// full they are dropped and counted (the history is for people; nothing depends on it).

// HistoryConfig bounds the placement history (sharding.placement-history.*).
type HistoryConfig struct {
	// MaxPerShard records are kept per shard; 0 turns the history off.
	MaxPerShard int
	// Retention is how long a record is kept.
	Retention time.Duration
}

// PlacementRecord is one allocation change.
type PlacementRecord struct {
	At          time.Time         `json:"at"`
	Type        string            `json:"type"`
	Shard       shard.ID          `json:"shard"`
	From        membership.NodeID `json:"from,omitempty"`
	To          membership.NodeID `json:"to"`
	Epoch       coordinator.Epoch `json:"epoch"`
	Cause       coordinator.Cause `json:"cause"`
	Handoff     time.Duration     `json:"handoff,omitempty"`
	Entities    int               `json:"entities,omitempty"`
	Coordinator membership.NodeID `json:"coordinator"`
}

func historyKey(typ string, s shard.ID, epoch coordinator.Epoch) string {
	return datadir.Key(datadir.FamilyHistory, typ, string(s), fmt.Sprintf("%016x", uint64(epoch)))
}

const (
	historyQueue      = 4096
	historyBatch      = 512
	historyPruneEvery = 10 * time.Minute
)

// recordPlacement queues a record of an allocation made by a coordinator here.
func (n *Node) recordPlacement(typ string, e coordinator.ShardAllocated, now time.Time) {
	if n.cfg.History.MaxPerShard <= 0 {
		return
	}
	r := PlacementRecord{At: now, Type: typ, Shard: e.Shard, From: e.From, To: e.Region, Epoch: e.Epoch, Cause: e.Cause,
		Handoff: e.Took, Entities: e.Entities, Coordinator: n.self.Node}
	select {
	case n.history <- r:
	default:
		if n.historyDropped.Add(1)%1000 == 1 {
			n.log.Warn("placement history: records dropped, the store does not keep up", "dropped", n.historyDropped.Load())
		}
	}
}

// writeHistory writes queued records in batches, and prunes the history of the types whose
// coordinator runs here now and then.
func (n *Node) writeHistory() {
	defer n.wg.Done()
	defer n.caught("writing the placement history")
	prune := time.NewTicker(historyPruneEvery)
	defer prune.Stop()
	batch := make([]remember.Write, 0, historyBatch)
	for {
		select {
		case <-n.ctx.Done():
			return
		case r := <-n.history:
			batch = append(batch[:0], historyWrite(r))
		drain:
			for len(batch) < historyBatch {
				select {
				case r := <-n.history:
					batch = append(batch, historyWrite(r))
				default:
					break drain
				}
			}
			ctx, cancel := context.WithTimeout(n.ctx, 30*time.Second)
			if err := n.store.Write(ctx, batch...); err != nil && n.ctx.Err() == nil {
				n.log.Warn("placement history: records not stored", "records", len(batch), "err", err)
			}
			cancel()
		case <-prune.C:
			n.pruneHistory()
		}
	}
}

func historyWrite(r PlacementRecord) remember.Write {
	v, _ := json.Marshal(r) // plain fields: cannot fail
	return remember.Write{Key: historyKey(r.Type, r.Shard, r.Epoch), Value: v}
}

// pruneHistory removes the records beyond the limits of the types whose coordinator runs here.
func (n *Node) pruneHistory() {
	ctx, cancel := context.WithTimeout(n.ctx, time.Minute)
	defer cancel()
	types, err := onLoop(ctx, n, func(time.Time) ([]string, error) {
		var out []string
		for _, typ := range n.eng.Types() {
			if n.eng.Coordinator(typ) != nil {
				out = append(out, typ)
			}
		}
		return out, nil
	})
	if err != nil {
		return
	}
	for _, typ := range types {
		recs, err := n.History(ctx, HistoryQuery{Types: []string{typ}})
		if err != nil {
			n.log.Debug("placement history: not pruned", "type", typ, "err", err)
			continue
		}
		var ws []remember.Write
		for _, r := range expiredHistory(recs, time.Now(), n.cfg.History) {
			ws = append(ws, remember.Write{Key: historyKey(r.Type, r.Shard, r.Epoch), Delete: true})
		}
		for len(ws) > 0 {
			part := ws[:min(len(ws), historyBatch)]
			ws = ws[len(part):]
			if err := n.store.Write(ctx, part...); err != nil {
				n.log.Debug("placement history: not pruned", "type", typ, "err", err)
				break
			}
		}
	}
}

// expiredHistory returns the records to remove: older than the retention, or beyond the
// newest MaxPerShard of their shard.
func expiredHistory(recs []PlacementRecord, now time.Time, cfg HistoryConfig) []PlacementRecord {
	byShard := map[string][]PlacementRecord{}
	for _, r := range recs {
		k := r.Type + datadir.Sep + string(r.Shard)
		byShard[k] = append(byShard[k], r)
	}
	var out []PlacementRecord
	for _, k := range slices.Sorted(maps.Keys(byShard)) {
		rs := byShard[k]
		slices.SortFunc(rs, func(a, b PlacementRecord) int { return cmp.Compare(a.Epoch, b.Epoch) })
		for i, r := range rs {
			if len(rs)-i > cfg.MaxPerShard || (cfg.Retention > 0 && now.Sub(r.At) > cfg.Retention) {
				out = append(out, r)
			}
		}
	}
	return out
}

// HistoryQuery filters the placement history.
type HistoryQuery struct {
	Types []string // every type registered here when empty
	Shard shard.ID // every shard when empty
	Since time.Time
}

// History reads the placement history from a read quorum of the store, oldest first.
func (n *Node) History(ctx context.Context, q HistoryQuery) ([]PlacementRecord, error) {
	types := q.Types
	if len(types) == 0 {
		types = n.TypeNames()
	}
	var out []PlacementRecord
	for _, typ := range types {
		prefix := datadir.Prefix(datadir.FamilyHistory, typ)
		if q.Shard != "" {
			prefix = datadir.Prefix(datadir.FamilyHistory, typ, string(q.Shard))
		}
		recs, err := n.store.Scan(ctx, prefix)
		if err != nil {
			return nil, fmt.Errorf("read the placement history of %s: %w", typ, err)
		}
		for _, rec := range recs {
			var r PlacementRecord
			if err := json.Unmarshal(rec.Value, &r); err != nil {
				n.log.Warn("placement history: unreadable record", "key", strconv.Quote(rec.Key), "err", err)
				continue
			}
			if !r.At.Before(q.Since) {
				out = append(out, r)
			}
		}
	}
	slices.SortStableFunc(out, func(a, b PlacementRecord) int {
		if c := a.At.Compare(b.At); c != 0 {
			return c
		}
		return strings.Compare(string(a.Shard), string(b.Shard))
	})
	return out, nil
}
