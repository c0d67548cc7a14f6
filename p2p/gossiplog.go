package p2p

import (
	"context"
	"log/slog"
)

// quietDeliveryTags demotes one gossipsub warning to debug. gossipsub v0.17.0 bumps a
// "delivery tag" on the connection manager for every message it receives and, when the
// manager keeps no decaying tags (ours, connmgr.NullConnMgr, trims nothing: every connection
// is to a cluster member), warns "error bumping delivery tag" each time: once per gossip
// message, for nothing. Every other record passes unchanged.
type quietDeliveryTags struct{ slog.Handler }

func (h quietDeliveryTags) Handle(ctx context.Context, r slog.Record) error {
	if r.Level == slog.LevelWarn && r.Message == "error bumping delivery tag" {
		if !h.Enabled(ctx, slog.LevelDebug) {
			return nil
		}
		r.Level = slog.LevelDebug
	}
	return h.Handler.Handle(ctx, r)
}

func (h quietDeliveryTags) WithAttrs(attrs []slog.Attr) slog.Handler {
	return quietDeliveryTags{h.Handler.WithAttrs(attrs)}
}

func (h quietDeliveryTags) WithGroup(name string) slog.Handler {
	return quietDeliveryTags{h.Handler.WithGroup(name)}
}
