package trust

import (
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/shardmesh/shardmesh/membership"
)

// Gate is a member's edge of admission. The member's state machines (node.Core for the
// membership, coordination and region protocols, remember.Machine for the replica protocol)
// drop the frames of every peer that is not an admitted member of their membership —
// Joining, WeaklyUp, Up, Leaving or Exiting — where the frames would take effect; the gate
// tells the operator of it, and holds a copy of that membership for what must be decided at the edge.
// It counts what they refused (shardmesh_trust_frames_refused_total) and logs it every FlushEvery, one line
// per peer: a warning for a peer that is not a member, a debug line for one that joined a
// moment ago (its frames can arrive before the gossip that makes it known here) or left a
// moment ago. Gossip topics ask Admits before a message is relayed (p2p.Topic.Gate), and
// Changed keeps the members' connections protected. Safe for concurrent use; Admits costs
// an atomic load and a map lookup.
type Gate struct {
	cfg     GateConfig
	current atomic.Pointer[admitted]

	refused *prometheus.CounterVec // nil without metrics
	joins   prometheus.Counter

	mu        sync.Mutex
	pending   map[peer.ID]*refusals // refusals not logged yet
	untracked uint64                // refusals of peers beyond maxPending
	flushDue  bool
	former    map[peer.ID]time.Time // when each peer stopped being admitted
	joinLog   map[peer.ID]time.Time // when a refused join of each peer was last logged
}

// admitted is the membership the gate decides from: every member the view knows, Down and
// Removed ones included.
type admitted struct {
	ids map[peer.ID]membership.Member
}

func (a *admitted) admits(id peer.ID) bool {
	m, ok := a.ids[id]
	return ok && m.Status < membership.Down
}

// refusals are the frames of one peer refused since the last flush.
type refusals struct {
	frames    uint64
	protocols []protocol.ID
	addr      string
}

// GateConfig configures a Gate.
type GateConfig struct {
	// Logger receives the refusals. Default: discard.
	Logger *slog.Logger
	// Metrics, when set, receives the gate's counters.
	Metrics prometheus.Registerer
	// RemoteAddr returns the address a peer is connected from, for the logs ("" unknown).
	RemoteAddr func(peer.ID) string
	// Changed, when set, is told the members that became admitted and those that no longer
	// are, on the goroutine of SetMembers: to protect their connections and keep them room.
	Changed func(admitted, gone []membership.Member)
	// FlushEvery is how often refusals are logged. Default 5 s.
	FlushEvery time.Duration
}

// Limits of what the gate remembers for its logs.
const (
	maxPending      = 1024             // peers with refusals waiting to be logged
	maxLinesPerPass = 10               // warnings per flush; the rest are summed up in one line
	formerFor       = 10 * time.Minute // a peer that left is a former member for this long
	joinLogEvery    = time.Minute      // a refused join of one peer is logged this often
)

// NewGate returns a gate that admits nobody until SetMembers.
func NewGate(cfg GateConfig) (*Gate, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.RemoteAddr == nil {
		cfg.RemoteAddr = func(peer.ID) string { return "" }
	}
	if cfg.FlushEvery <= 0 {
		cfg.FlushEvery = 5 * time.Second
	}
	g := &Gate{cfg: cfg, pending: map[peer.ID]*refusals{}, former: map[peer.ID]time.Time{}, joinLog: map[peer.ID]time.Time{}}
	g.current.Store(&admitted{ids: map[peer.ID]membership.Member{}})
	if cfg.Metrics != nil {
		g.refused = prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "shardmesh_trust_frames_refused_total",
			Help: "Frames of the member protocols refused because their sender is not an admitted member, by protocol.",
		}, []string{"protocol"})
		g.joins = prometheus.NewCounter(prometheus.CounterOpts{
			Name: "shardmesh_trust_joins_refused_total",
			Help: "Joins refused because the joining member (or the member answering a join) is not admitted.",
		})
		for _, c := range []prometheus.Collector{g.refused, g.joins} {
			if err := cfg.Metrics.Register(c); err != nil {
				return nil, err
			}
		}
	}
	return g, nil
}

// SetMembers sets the membership the gate admits from: members with a status below Down
// are admitted. Call it when the members admitted change.
func (g *Gate) SetMembers(members []membership.Member) {
	cur := g.current.Load()
	next := &admitted{ids: make(map[peer.ID]membership.Member, len(members))}
	for _, m := range members {
		if id, err := peer.Decode(string(m.Node)); err == nil {
			next.ids[id] = m
		}
	}
	var joined, gone []membership.Member
	for id, m := range next.ids {
		if next.admits(id) && !cur.admits(id) {
			joined = append(joined, m)
		}
	}
	for id, m := range cur.ids {
		if cur.admits(id) && !next.admits(id) {
			gone = append(gone, m)
		}
	}
	g.current.Store(next)
	if len(joined) == 0 && len(gone) == 0 {
		return
	}
	now := time.Now()
	g.mu.Lock()
	for _, m := range gone {
		if id, err := peer.Decode(string(m.Node)); err == nil {
			g.former[id] = now
		}
	}
	for id, at := range g.former {
		if now.Sub(at) > formerFor {
			delete(g.former, id)
		}
	}
	g.mu.Unlock()
	if g.cfg.Changed != nil {
		g.cfg.Changed(joined, gone)
	}
}

// Admits reports whether id is an admitted member now.
func (g *Gate) Admits(id peer.ID) bool { return g.current.Load().admits(id) }

// Refused counts a frame (or gossip message) of proto from id that was dropped because id
// is not admitted, and logs it with the next flush.
func (g *Gate) Refused(id peer.ID, proto protocol.ID) {
	if g.refused != nil {
		g.refused.WithLabelValues(string(proto)).Inc()
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	r := g.pending[id]
	if r == nil {
		if len(g.pending) >= maxPending {
			g.untracked++
			return
		}
		r = &refusals{addr: g.cfg.RemoteAddr(id)}
		g.pending[id] = r
	}
	r.frames++
	if !slices.Contains(r.protocols, proto) {
		r.protocols = append(r.protocols, proto)
	}
	if !g.flushDue {
		g.flushDue = true
		time.AfterFunc(g.cfg.FlushEvery, g.flush)
	}
}

// flush logs the refusals since the last flush.
func (g *Gate) flush() {
	g.mu.Lock()
	pending, untracked := g.pending, g.untracked
	g.pending, g.untracked, g.flushDue = map[peer.ID]*refusals{}, 0, false
	former := make(map[peer.ID]bool, len(pending))
	for id := range pending {
		_, former[id] = g.former[id]
	}
	g.mu.Unlock()
	ids := make([]peer.ID, 0, len(pending))
	for id := range pending {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	warned, more, moreFrames := 0, 0, untracked
	for _, id := range ids {
		r := pending[id]
		protos := make([]string, len(r.protocols))
		for i, p := range r.protocols {
			protos[i] = string(p)
		}
		args := []any{"peer", id.String(), "addr", r.addr, "protocols", strings.Join(protos, ","), "frames", r.frames}
		switch {
		case g.Admits(id):
			g.cfg.Logger.Debug("dropped frames from a member that sent them before it was known here", args...)
		case former[id]:
			g.cfg.Logger.Debug("dropped frames from a former member", args...)
		case warned < maxLinesPerPass:
			warned++
			g.cfg.Logger.Warn("refused frames from a peer that is not a member", args...)
		default:
			more++
			moreFrames += r.frames
		}
	}
	if more > 0 || untracked > 0 {
		g.cfg.Logger.Warn("refused frames from more peers that are not members", "peers", more, "frames", moreFrames)
	}
}

// JoinRefused counts a join refused because id is not admitted, and logs it (at most once
// a minute per peer).
func (g *Gate) JoinRefused(id peer.ID, why error) {
	if g.joins != nil {
		g.joins.Inc()
	}
	now := time.Now()
	g.mu.Lock()
	last, seen := g.joinLog[id]
	if seen && now.Sub(last) < joinLogEvery {
		g.mu.Unlock()
		return
	}
	if len(g.joinLog) >= maxPending {
		for p, at := range g.joinLog {
			if now.Sub(at) >= joinLogEvery {
				delete(g.joinLog, p)
			}
		}
	}
	logIt := len(g.joinLog) < maxPending
	if logIt {
		g.joinLog[id] = now
	}
	g.mu.Unlock()
	if logIt {
		g.cfg.Logger.Warn("join refused: not an admitted member", "peer", id.String(), "addr", g.cfg.RemoteAddr(id), "reason", why.Error())
	}
}
