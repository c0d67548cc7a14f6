package node

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
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

	deleted bool // a removal of the record (pruning), queued with the records to write
}

func historyKey(typ string, s shard.ID, epoch coordinator.Epoch) string {
	return datadir.Key(datadir.FamilyHistory, typ, string(s), fmt.Sprintf("%016x", uint64(epoch)))
}

const (
	historyQueue      = 4096
	historyBatch      = 512
	historyPruneEvery = 10 * time.Minute
)

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
		for _, r := range parseHistory(recs, n.log) {
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

// parseHistory decodes placement records from the store, skipping (and logging) any that
// do not decode.
func parseHistory(recs []remember.Record, log *slog.Logger) []PlacementRecord {
	out := make([]PlacementRecord, 0, len(recs))
	for _, rec := range recs {
		var r PlacementRecord
		if err := json.Unmarshal(rec.Value, &r); err != nil {
			log.Warn("placement history: unreadable record", "key", strconv.Quote(rec.Key), "err", err)
			continue
		}
		out = append(out, r)
	}
	return out
}
