package config

import (
	"github.com/shardmesh/shardmesh/membership"
)

// Config is everything a daemon is configured with.
type Config struct {
	Node       Node
	Membership membership.Config
	Sharding   Sharding
}

// Node holds the daemon's own settings (the top-level keys of the file).
type Node struct {
	// DataDir holds the identity key, the incarnation counter, the listen addresses (addrs)
	// and the durable state. Required.
	DataDir string
	// Listen are multiaddrs to listen on. Default: /ip4/127.0.0.1/tcp/0.
	Listen []string
	// Join are multiaddrs (ending in /p2p/<peer id>) of members to join through. Empty:
	// form a new cluster.
	Join []string
	// ClusterKey is the path of the cluster's private-network key (shardctl keygen). Empty:
	// an open mesh.
	ClusterKey string
	// ClusterName names the cluster's gossip topics and mDNS service. Default "shardmesh".
	ClusterName string
	// Roles are this member's roles.
	Roles []string
	// AppVersion is this member's application version (rolling updates). Default "0".
	AppVersion string
	// AllowPeers, when set, is the only set of peer ids this member talks to.
	AllowPeers []string
	// AdminAllow are peer ids of admin identities allowed to change the cluster.
	AdminAllow []string
	// MDNS turns on discovery of members on the local network. Default off.
	MDNS bool
	// LogLevel is debug, info, warn or error. Default info.
	LogLevel string
	// LogFormat is text or json. Default text.
	LogFormat string
}

// Sharding holds the sharding settings (akka.cluster.sharding).
type Sharding struct {
	// NumberOfShards of the default extractor; equal on every member (number-of-shards).
	// Default 1000.
	NumberOfShards int
}

// Default returns the defaults of every key.
func Default() Config {
	return Config{
		Node: Node{
			Listen:      []string{"/ip4/127.0.0.1/tcp/0"},
			ClusterName: "shardmesh",
			AppVersion:  "0",
			LogLevel:    "info",
			LogFormat:   "text",
		},
		Membership: membership.DefaultConfig(),
		Sharding:   Sharding{NumberOfShards: 1000},
	}
}
