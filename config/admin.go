package config

import "slices"

// The admin protocol's keys beside admin-allow (which schema.go lists with the other peer
// lists): registered here, next to it in the documented order.
func init() {
	at := slices.IndexFunc(Schema, func(k Key) bool { return k.Path == "admin-allow" }) + 1
	Schema = slices.Insert(Schema, at,
		flagged(boolKey("admin-read-only-open", "answer admin calls that only read (members, stats, locate, health, watch, …) and messages to entities (tell, ask, bench) to any peer holding the cluster key; off: only to admin identities and members (default on)",
			func(c *Config) *bool { return &c.Node.AdminReadOnlyOpen })),
	)
}
