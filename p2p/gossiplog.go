package p2p

import (
	"context"
	"log/slog"

	"github.com/libp2p/go-libp2p/gologshim"
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

// RouteLibp2pLogs sends go-libp2p's own logs (those not given a logger through Config) to
// h, the program's handler, so that they share its format and keys, at warning level and
// above. The lines of libp2p's dependency injection (system=fx: "start failed, rolling
// back") are dropped: their error comes back from New, which the caller reports once. Call
// it once, before the first host starts; it is process-wide. So is the swarm's warning
// "listening failed": New fails with the same error.
func RouteLibp2pLogs(h slog.Handler) { gologshim.SetDefaultHandler(libp2pLogs{h: h}) }

type libp2pLogs struct {
	h  slog.Handler
	fx bool // the logger of libp2p's dependency injection
}

func (l libp2pLogs) Enabled(ctx context.Context, level slog.Level) bool {
	return !l.fx && level >= slog.LevelWarn && l.h.Enabled(ctx, level)
}

func (l libp2pLogs) Handle(ctx context.Context, r slog.Record) error {
	if !l.Enabled(ctx, r.Level) || r.Message == "listening failed" {
		return nil
	}
	return l.h.Handle(ctx, r)
}

func (l libp2pLogs) WithAttrs(attrs []slog.Attr) slog.Handler {
	fx := l.fx
	for _, a := range attrs {
		fx = fx || a.Key == "system" && a.Value.String() == "fx"
	}
	return libp2pLogs{h: l.h.WithAttrs(attrs), fx: fx}
}

func (l libp2pLogs) WithGroup(name string) slog.Handler {
	return libp2pLogs{h: l.h.WithGroup(name), fx: l.fx}
}
