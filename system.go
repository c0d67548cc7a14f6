package shardmesh

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/pnet"
	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"

	"github.com/shardmesh/shardmesh/config"
	"github.com/shardmesh/shardmesh/datadir"
	"github.com/shardmesh/shardmesh/discovery"
	"github.com/shardmesh/shardmesh/lease"
	"github.com/shardmesh/shardmesh/membership"
	"github.com/shardmesh/shardmesh/node"
	"github.com/shardmesh/shardmesh/p2p"
	"github.com/shardmesh/shardmesh/remember"
	"github.com/shardmesh/shardmesh/trust"
)

// System is a running member: the handle to register entity types on and to send from.
type System struct {
	cfg  config.Config
	node *node.Node
	// roles maps each entity type registered by Init to the role of the members that host
	// it ("" for every member).
	roles sync.Map
}

// Option adjusts how Start runs the member.
type Option func(*node.Config)

// WithLogger sends the member's logs to l.
func WithLogger(l *slog.Logger) Option { return func(c *node.Config) { c.Logger = l } }

// WithMetrics records the member's Prometheus metrics (and its store's) in reg; give each
// member its own registry (prometheus.NewRegistry). docs/metrics.md lists them.
func WithMetrics(reg prometheus.Registerer) Option { return func(c *node.Config) { c.Metrics = reg } }

// WithTracing records OpenTelemetry spans of the messages' ways with tp (routing, waiting
// in a buffer or for a handoff, the entity's handling, its state's store rounds), their
// trace context carried in the messages across members; tracing.FromEnv builds tp from the
// standard OTEL_* variables. Without it tracing is off.
func WithTracing(tp trace.TracerProvider) Option { return func(c *node.Config) { c.Tracing = tp } }

// WithServingWatch calls fn, in order, when this member starts or stops serving: it
// serves while it is Up and holds its majority lease — grants from a majority of the
// members, each an echo of one of its heartbeats, valid for the failure detector's
// acceptable-heartbeat-pause from when that heartbeat left (a member cut off in a minority
// stops within that pause, before the majority can remove it). at is when the change took
// effect. fn runs on the member's loop: keep it quick.
func WithServingWatch(fn func(serving bool, at time.Time)) Option {
	return func(c *node.Config) { c.ServingChanged = fn }
}

// WithLease provides the shards' lease for sharding.use-lease = name: an external lease
// (a lock service the clusters share, as Akka's Kubernetes lease) instead of the built-in
// "store" lease, which is kept in the cluster's own replicated store.
func WithLease(name string, p lease.Provider) Option {
	return func(c *node.Config) {
		c.Leases = func(*remember.Store) lease.Provider { return p }
		c.LeaseName = name
	}
}

// WithAdminIdentity signs the directives this program changes (PinShard, UnpinShard) with
// an admin identity: a member with admins (admin-allow, cluster-authority) follows only
// directives signed by one of them.
func WithAdminIdentity(key crypto.PrivKey) Option {
	return func(c *node.Config) { c.AdminIdentity = key }
}

// Start starts a member with cfg (config.Default() with at least Node.DataDir, or
// config.Load). It returns once the member listens; it joins (or forms) the cluster in the
// background.
func Start(ctx context.Context, cfg config.Config, opts ...Option) (*System, error) {
	var psk pnet.PSK
	if cfg.Node.ClusterKey != "" {
		var err error
		if psk, err = p2p.LoadClusterKey(cfg.Node.ClusterKey); err != nil {
			return nil, err
		}
	}
	var accept []pnet.PSK
	for _, f := range cfg.Node.ClusterKeyAccept {
		k, err := p2p.LoadClusterKey(f)
		if err != nil {
			return nil, fmt.Errorf("cluster-key-accept: %w", err)
		}
		accept = append(accept, k)
	}
	allow, err := config.PeerIDs("allow-peers", cfg.Node.AllowPeers)
	if err != nil {
		return nil, err
	}
	admins, err := config.PeerIDs("admin-allow", cfg.Node.AdminAllow)
	if err != nil {
		return nil, err
	}
	if len(allow) > 0 {
		allow = append(allow, admins...) // admin identities must be able to connect
	}
	authorities, err := config.PeerIDs("cluster-authority", cfg.Node.ClusterAuthority)
	if err != nil {
		return nil, err
	}
	networks, err := config.Networks("operator-networks", cfg.Node.OperatorNetworks)
	if err != nil {
		return nil, err
	}
	credential, err := memberCredential(cfg.Node)
	if err != nil {
		return nil, err
	}
	if cfg.Membership.JoinChecks == nil {
		cfg.Membership.JoinChecks = config.JoinChecks(cfg)
	}
	nc := node.Config{
		DataDir:           cfg.Node.DataDir,
		Listen:            cfg.Node.Listen,
		Join:              cfg.Node.Join,
		ClusterKey:        psk,
		AcceptKeys:        accept,
		OpenMesh:          cfg.Node.OpenMesh,
		Trust:             trust.NewPolicy(authorities, admins),
		Credential:        credential,
		ClusterName:       cfg.Node.ClusterName,
		Roles:             rolesWithZone(cfg.Node.Roles, cfg.Node.Zone),
		AppVersion:        cfg.Node.AppVersion,
		AllowPeers:        allow,
		MDNS:              cfg.Node.MDNS,
		ForgetLastCluster: cfg.Node.ForgetLastCluster,
		Membership:        cfg.Membership,
		ShutdownTimeout:   cfg.Sharding.HandoffTimeout,
		Store: node.StoreConfig{
			ReplicationFactor: cfg.Store.ReplicationFactor,
			MaxMoves:          cfg.Store.MaxMoves,
			Timeout:           cfg.Sharding.Remember.UpdatingStateTimeout,
			MinFreeSpace:      reserveOrNone(cfg.Store.MinFreeSpace),
			RebuildDamaged:    cfg.Store.RebuildDamaged,
		},
		History: node.HistoryConfig{MaxPerShard: cfg.Sharding.History.MaxPerShard, Retention: cfg.Sharding.History.Retention},
	}
	if cfg.Sharding.Lease.Use == "store" {
		sl := lease.StoreConfig{HeartbeatTimeout: cfg.Sharding.Lease.HeartbeatTimeout, HeartbeatInterval: cfg.Sharding.Lease.HeartbeatInterval}
		nc.Leases = func(st *remember.Store) lease.Provider { return lease.NewStoreProvider(st, sl) }
		nc.LeaseName = "store"
	}
	for _, o := range opts {
		o(&nc)
	}
	if err := dnsDiscovery(cfg, &nc); err != nil {
		return nil, err
	}
	if use := cfg.Sharding.Lease.Use; use != "" && nc.LeaseName != use {
		return nil, fmt.Errorf("sharding.use-lease = %q: no such lease provider (\"store\", or one given with shardmesh.WithLease(%q, …))", use, use)
	}
	if len(networks) > 0 {
		nc.OperatorNetworks = networks
	}
	if cfg.Membership.SplitBrainResolver.ActiveStrategy == membership.LeaseMajority {
		switch impl := cfg.Membership.SplitBrainResolver.LeaseMajority.LeaseImplementation; impl {
		case "", "store":
			sl := lease.StoreConfig{HeartbeatTimeout: cfg.Sharding.Lease.HeartbeatTimeout, HeartbeatInterval: cfg.Sharding.Lease.HeartbeatInterval}
			nc.ResolverLease = func(st *remember.Store) lease.Provider { return lease.NewStoreProvider(st, sl) }
		case nc.LeaseName:
			nc.ResolverLease = nc.Leases
		default:
			return nil, fmt.Errorf("split-brain-resolver.lease-majority.lease-implementation = %q: no such lease provider (\"store\", or one given with shardmesh.WithLease(%q, …))", impl, impl)
		}
	}
	n, err := node.Start(ctx, nc)
	if err != nil {
		return nil, err
	}
	return &System{cfg: cfg, node: n}, nil
}

// Node returns the member's runtime (for the daemon and tools: admin, views, events).
func (s *System) Node() *node.Node { return s.node }

// Config returns the configuration the member started with.
func (s *System) Config() config.Config { return s.cfg }

// ID returns the member's node id (its libp2p peer id).
func (s *System) ID() membership.NodeID { return s.node.ID() }

// Done is closed when the member has stopped.
func (s *System) Done() <-chan struct{} { return s.node.Done() }

// Leave hands off every shard, leaves the cluster and waits until removed (or ctx ends).
func (s *System) Leave(ctx context.Context) error { return s.node.Leave(ctx) }

// Close stops the member at once without leaving (the cluster will find it unreachable).
func (s *System) Close() error { return s.node.Close() }

// memberCredential reads the member's credential: from member-credential, else from
// <data-dir>/member.credential when it exists (nil when not).
func memberCredential(cfg config.Node) ([]byte, error) {
	path := cfg.MemberCredential
	if path == "" {
		path = filepath.Join(cfg.DataDir, datadir.CredentialFile)
		if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
	}
	c, err := trust.ReadCredentialFile(path)
	if err != nil {
		return nil, fmt.Errorf("member-credential: %w", err)
	}
	return c.Raw, nil
}

// rolesWithZone adds the role that names zone (node.ZoneRolePrefix) to roles.
func rolesWithZone(roles []string, zone string) []string {
	if zone == "" {
		return roles
	}
	return append(slices.Clone(roles), node.ZoneRolePrefix+zone)
}

// dnsDiscovery sets up join-dns: the member finds the others by DNS (package discovery).
func dnsDiscovery(cfg config.Config, nc *node.Config) error {
	j := cfg.Node.JoinDNS
	if j.Name == "" || len(nc.Join) > 0 || nc.Discovery != nil {
		return nil
	}
	name, err := discovery.ParseName(j.Name)
	if err != nil {
		return fmt.Errorf("join-dns %q: %w", j.Name, err)
	}
	log := nc.Logger
	if log == nil {
		log = slog.Default()
	}
	d, err := discovery.NewDNS(discovery.Config{
		Name: name, Port: cfg.Node.ListenPort(), Server: j.Server,
		Interval: j.Interval, StableMargin: j.StableMargin, MinMembers: cfg.Membership.MinNrOfMembers,
		Logger: log.With("component", "discovery"),
	})
	if err != nil {
		return err
	}
	nc.Discovery = d
	return nil
}

// reserveOrNone maps store.min-free-space (0: off) to StoreConfig.MinFreeSpace (0: the
// default, negative: none).
func reserveOrNone(bytes int64) int64 {
	if bytes == 0 {
		return -1
	}
	return bytes
}
