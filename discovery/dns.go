package discovery

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/multiformats/go-multiaddr"
	manet "github.com/multiformats/go-multiaddr/net"

	"github.com/shardmesh/shardmesh/p2p"
)

// Defaults of Config.
const (
	// DefaultInterval: how often the name is resolved while the member has not joined.
	// Akka's contact-point-discovery.interval is 1 s; 2 s halves the queries of a large
	// StatefulSet starting at once and adds at most a second to a cold start.
	DefaultInterval = 2 * time.Second
	// DefaultStableMargin: Akka's contact-point-discovery.stable-margin.
	DefaultStableMargin = 5 * time.Second
	// identifyTimeout bounds learning one address's peer id and connecting to it.
	identifyTimeout = 5 * time.Second
)

// Config configures DNS discovery.
type Config struct {
	// Name is what to resolve (see ParseName).
	Name Name
	// Port is the port of A and AAAA answers when Name has none: this member's own listen
	// port, which every member of a StatefulSet shares.
	Port int
	// Server is the host:port of the DNS server to ask; empty: the system's resolver.
	Server string
	// Interval is how often Name is resolved until the member has joined. Default
	// DefaultInterval.
	Interval time.Duration
	// StableMargin is how long the members found must stay the same before the one with the
	// lowest peer id forms a new cluster. Default DefaultStableMargin.
	StableMargin time.Duration
	// MinMembers is how many members must be found before one forms a new cluster
	// (cluster.min-nr-of-members). Default 1.
	MinMembers int
	// Logger receives what discovery finds and waits for. Default: discard.
	Logger *slog.Logger
}

// DNS is DNS discovery (node.Config.Discovery).
type DNS struct {
	cfg Config
	res *Resolver
}

// NewDNS checks cfg and returns the discovery it configures.
func NewDNS(cfg Config) (*DNS, error) {
	if cfg.Interval <= 0 {
		cfg.Interval = DefaultInterval
	}
	if cfg.StableMargin < 0 {
		return nil, fmt.Errorf("join-dns-stable-margin %v: must not be negative", cfg.StableMargin)
	}
	if cfg.StableMargin == 0 {
		cfg.StableMargin = DefaultStableMargin
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	res, err := NewResolver(cfg.Name, cfg.Port, cfg.Server)
	if err != nil {
		return nil, err
	}
	return &DNS{cfg: cfg, res: res}, nil
}

// Run resolves the name every Interval until joined reports true or ctx ends. It connects
// to every member found and calls joinVia once per peer id; it calls form when this member
// is the one to form a new cluster (Bootstrap). joinVia and form are the member's: the
// membership machine repeats a join request every seed-node-timeout by itself.
func (d *DNS) Run(ctx context.Context, host *p2p.Host, joined func() bool, joinVia func(peer.ID), form func(why string)) {
	log := d.cfg.Logger.With("join_dns", d.cfg.Name.Host)
	log.Info("looking for members by DNS", "every", d.cfg.Interval, "min_members", max(d.cfg.MinMembers, 1), "stable_margin", d.cfg.StableMargin)
	self := host.ID()
	boot := NewBootstrap(self.String(), d.cfg.MinMembers, d.cfg.StableMargin)
	asked := map[peer.ID]bool{} // peers joinVia was called for
	var lastWhy, lastErr string
	tick := time.NewTicker(d.cfg.Interval)
	defer tick.Stop()
	for {
		if joined() {
			log.Info("joined a cluster; DNS discovery stops")
			return
		}
		addrs, err := d.res.Lookup(ctx)
		switch {
		case ctx.Err() != nil:
			return
		case err != nil:
			if err.Error() != lastErr {
				log.Warn("cannot resolve the members' name; trying again", "err", err, "every", d.cfg.Interval)
				lastErr = err.Error()
			}
		default:
			lastErr = ""
			found := d.round(ctx, log, host, addrs, asked, joinVia)
			if ctx.Err() != nil {
				return
			}
			if joined() {
				continue // admitted meanwhile: no decision to make
			}
			dec := boot.Observe(time.Now(), found)
			switch {
			case dec.Form:
				form(dec.Why) // the member logs it
			case dec.Why != lastWhy:
				log.Info("DNS discovery: "+dec.Why, "addresses", len(addrs))
				lastWhy = dec.Why
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// round learns the peer id at every address, all at once, connects to the members not
// asked yet and asks them to admit this one. It returns the peer id found at each address
// ("" where none answered, or the connection failed).
func (d *DNS) round(ctx context.Context, log *slog.Logger, host *p2p.Host, addrs []string, asked map[peer.ID]bool, joinVia func(peer.ID)) map[string]string {
	type answer struct {
		addr string
		id   peer.ID
		err  error
	}
	answers := make([]answer, len(addrs))
	var wg sync.WaitGroup
	for i, a := range addrs {
		wg.Go(func() {
			answers[i] = answer{addr: a}
			ma, err := toMultiaddr(a)
			if err != nil {
				answers[i].err = err
				return
			}
			ictx, cancel := context.WithTimeout(ctx, identifyTimeout)
			defer cancel()
			id, err := host.IdentifyAddr(ictx, ma)
			if err == nil && id != host.ID() && !asked[id] {
				p2pPart, perr := multiaddr.NewComponent("p2p", id.String())
				if perr != nil {
					err = perr
				} else {
					_, err = host.Connect(ictx, ma.Encapsulate(p2pPart.Multiaddr()))
				}
			}
			answers[i].id, answers[i].err = id, err
		})
	}
	wg.Wait()
	found := make(map[string]string, len(addrs))
	for _, a := range answers {
		if a.err != nil {
			log.Debug("DNS discovery: no member answers at an address yet", "addr", a.addr, "err", a.err)
			found[a.addr] = ""
			continue
		}
		found[a.addr] = a.id.String()
		if a.id != host.ID() && !asked[a.id] {
			asked[a.id] = true
			log.Info("DNS discovery: found a member; asking it to admit this one", "peer", a.id, "addr", a.addr)
			joinVia(a.id)
		}
	}
	return found
}

// toMultiaddr turns host:port into a TCP multiaddr.
func toMultiaddr(hostPort string) (multiaddr.Multiaddr, error) {
	h, p, err := net.SplitHostPort(hostPort)
	if err != nil {
		return nil, err
	}
	port, err := strconv.Atoi(p)
	if err != nil {
		return nil, err
	}
	ip := net.ParseIP(h)
	if ip == nil {
		return nil, errors.New("not an IP address: " + h)
	}
	return manet.FromNetAddr(&net.TCPAddr{IP: ip, Port: port})
}
