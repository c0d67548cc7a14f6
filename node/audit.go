package node

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/shardmesh/shardmesh/datadir"
	"github.com/shardmesh/shardmesh/remember"
)

// The audit log: the admin calls members took, recorded by the member that took each under
// au␀MILLIS␀ID (the time in 16 hex digits, so records sort by time) in the replicated store,
// written to a quorum. What a record holds is the admin server's (adminpb.AuditRecord).
// Records older than auditRetention, and beyond the newest auditMaxRecords, are removed
// now and then by the members that write.
const (
	auditRetention  = 90 * 24 * time.Hour
	auditMaxRecords = 10000
	auditPruneEvery = 64 // writes between two prunes
)

// RecordAudit stores an audit record taken at at.
func (n *Node) RecordAudit(ctx context.Context, at time.Time, record []byte) error {
	id := make([]byte, 8)
	_, _ = rand.Read(id)
	key := datadir.Key(datadir.FamilyAudit, fmt.Sprintf("%016x", at.UnixMilli()), hex.EncodeToString(id))
	if err := n.store.Write(ctx, remember.Write{Key: key, Value: record}); err != nil {
		return err
	}
	if n.auditWrites.Add(1)%auditPruneEvery == 0 {
		n.pruneAudit(ctx)
	}
	return nil
}

// AuditRecords returns every audit record, oldest first, read from a quorum of the
// metadata's replicas; when no quorum answers, what the members that answer hold, with a
// *PartialError naming the others (scanMetaOrPartial).
func (n *Node) AuditRecords(ctx context.Context) ([][]byte, error) {
	recs, err := n.scanMetaOrPartial(ctx, datadir.Prefix(datadir.FamilyAudit), "audit log")
	var partial *PartialError
	if err != nil && !errors.As(err, &partial) {
		return nil, err
	}
	out := make([][]byte, len(recs))
	for i, r := range recs {
		out[i] = r.Value
	}
	if partial != nil {
		return out, partial
	}
	return out, nil
}

// pruneAudit removes the records beyond auditRetention and auditMaxRecords.
func (n *Node) pruneAudit(ctx context.Context) {
	recs, err := n.store.Scan(ctx, datadir.Prefix(datadir.FamilyAudit))
	if err != nil {
		return
	}
	cutoff := time.Now().Add(-auditRetention).UnixMilli()
	var ws []remember.Write
	for i, r := range recs { // in key order: oldest first
		ms, _, _ := strings.Cut(strings.TrimPrefix(r.Key, datadir.Prefix(datadir.FamilyAudit)), datadir.Sep)
		at, err := strconv.ParseInt(ms, 16, 64)
		if err != nil || at < cutoff || len(recs)-i > auditMaxRecords {
			ws = append(ws, remember.Write{Key: r.Key, Delete: true})
		}
	}
	for len(ws) > 0 {
		part := ws[:min(len(ws), removeBatch)]
		ws = ws[len(part):]
		if err := n.store.Write(ctx, part...); err != nil {
			n.log.Debug("audit log: not pruned", "err", err)
			return
		}
	}
}
