package config

import (
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/multiformats/go-multiaddr"

	"github.com/shardmesh/shardmesh/config/value"
	"github.com/shardmesh/shardmesh/discovery"
)

// JoinDNS is DNS discovery (join-dns and the keys that tune it; package discovery).
type JoinDNS struct {
	// Name is join-dns: a name whose A/AAAA records (NAME or NAME:PORT) or SRV records
	// (_service._proto.domain) list the members. Empty: no DNS discovery.
	Name string
	// Server is join-dns-server: host:port of the DNS server to ask. Empty: the system's.
	Server string
	// Interval is join-dns-interval: how often the name is resolved until the member has
	// joined. Default 2 s.
	Interval time.Duration
	// StableMargin is join-dns-stable-margin: how long the members found must stay the same
	// before the one with the lowest peer id forms a new cluster. Default 5 s.
	StableMargin time.Duration
}

// DefaultJoinDNS returns the defaults: no DNS discovery; resolve every 2 s; a stable margin
// of 5 s (Akka's contact-point-discovery.stable-margin).
func DefaultJoinDNS() JoinDNS {
	return JoinDNS{Interval: discovery.DefaultInterval, StableMargin: discovery.DefaultStableMargin}
}

func init() {
	at := slices.IndexFunc(Schema, func(k Key) bool { return k.Path == "join" }) + 1
	j := func(c *Config) *JoinDNS { return &c.Node.JoinDNS }
	name := flagged(stringKey("join-dns", "find the members by DNS instead of --join: a name whose A/AAAA records list them (NAME, or NAME:PORT; the port defaults to this member's listen port), or an SRV name _service._proto.domain, e.g. a Kubernetes headless Service; resolved until joined, and with no cluster to join the member with the lowest peer id forms one once cluster.min-nr-of-members are found (default: none)",
		func(c *Config) *string { return &j(c).Name }))
	setName := name.set
	name.set = func(c *Config, raw any) error {
		if err := setName(c, raw); err != nil {
			return err
		}
		if j(c).Name == "" {
			return nil
		}
		if _, err := discovery.ParseName(j(c).Name); err != nil {
			return &value.Error{Key: "join-dns", Value: raw, Allowed: err.Error()}
		}
		return nil
	}
	Schema = slices.Insert(Schema, at, name,
		stringKey("join-dns-server", "host:port of the DNS server join-dns asks (default: the system's resolver, /etc/resolv.conf)",
			func(c *Config) *string { return &j(c).Server }),
		durationKey("join-dns-interval", "how often join-dns resolves the name until the member has joined (default 2s)", 10*time.Millisecond,
			func(c *Config) *time.Duration { return &j(c).Interval }),
		durationKey("join-dns-stable-margin", "how long the members join-dns finds must stay the same before the one with the lowest peer id forms a new cluster (default 5s)", 100*time.Millisecond,
			func(c *Config) *time.Duration { return &j(c).StableMargin }),
	)
}

// checkJoinDNS checks join-dns against the keys it depends on.
func checkJoinDNS(c *Config) error {
	n := c.Node
	if n.JoinDNS.Name == "" {
		return nil
	}
	if len(n.Join) > 0 {
		return fmt.Errorf("join (%s) and join-dns (%s) are both set: give the members to join by address (join) or by DNS name (join-dns), not both", c.Origin("join"), c.Origin("join-dns"))
	}
	name, err := discovery.ParseName(n.JoinDNS.Name)
	if err != nil {
		return nil // reported by the key itself
	}
	if !name.SRV && name.Port == 0 && n.ListenPort() == 0 {
		return &value.Error{Key: "join-dns", Value: n.JoinDNS.Name, Source: c.Origin("join-dns"),
			Allowed: "a name without a port needs a fixed listen port that every member shares (e.g. --listen /ip4/0.0.0.0/tcp/4001), or NAME:PORT"}
	}
	return nil
}

// ListenPort is the TCP port of the first listen address with a fixed port; 0 when every
// one picks a port at start.
func (n Node) ListenPort() int {
	for _, l := range n.Listen {
		ma, err := multiaddr.NewMultiaddr(l)
		if err != nil {
			continue
		}
		if p, err := ma.ValueForProtocol(multiaddr.P_TCP); err == nil && p != "0" {
			if port, err := strconv.Atoi(p); err == nil {
				return port
			}
		}
	}
	return 0
}
