package remember

// Unit is what a replica set holds: the records of one shard of an entity type (its
// remembered entities and its entities' durable state), or, as the zero Unit, the cluster
// metadata (coordinator terms, directives, placement history, leases, remembered shards,
// the units' replica configurations). A shard's unit lives on the replica set its host
// chose (units.go); the metadata on the oldest members (Placement.Meta).
type Unit struct {
	Type  string
	Shard string
}

// Meta reports whether u is the cluster metadata.
func (u Unit) Meta() bool { return u.Type == "" && u.Shard == "" }

// String names u for logs and errors: "metadata" or "type/shard".
func (u Unit) String() string {
	if u.Meta() {
		return "metadata"
	}
	return u.Type + "/" + u.Shard
}

// Layout maps the store's keys to units. The store is told it by its owner (node maps its
// key families, datadir); without one every key is metadata, held by the metadata set.
type Layout interface {
	// UnitOf returns the unit of key.
	UnitOf(key string) Unit
	// UnitOfPrefix returns the unit of every key under prefix; false when they span units
	// (then only Store.ScanAll reads them).
	UnitOfPrefix(prefix string) (Unit, bool)
	// Prefixes returns the key prefixes a shard's unit keeps its keys under, and no other
	// unit does.
	Prefixes(u Unit) []string
	// ConfigKey returns the metadata key that holds u's replica configuration.
	ConfigKey(u Unit) string
}

// metaLayout is the layout without shard units: everything is metadata.
type metaLayout struct{}

func (metaLayout) UnitOf(string) Unit               { return Unit{} }
func (metaLayout) UnitOfPrefix(string) (Unit, bool) { return Unit{}, true }
func (metaLayout) Prefixes(Unit) []string           { return nil }
func (metaLayout) ConfigKey(u Unit) string          { return "rc\x00" + u.Type + "\x00" + u.Shard }
func (metaLayout) String() string                   { return "metadata only" }

var _ Layout = metaLayout{}

// unitDigest summarises what a replica holds of one unit: the XOR of its keys' state
// hashes (digest.go), how many keys, how many of them tombstones. Two replicas holding the
// same entries of a unit have the same digest.
type unitDigest struct {
	hash       uint64
	count      int
	tombstones int
}

// update accounts for key's entry changing from old to next.
func (d *unitDigest) update(key string, old, next *entry) {
	d.hash ^= stateHash(key, old) ^ stateHash(key, next)
	if !old.absent() {
		d.count--
		if old.rec.Deleted {
			d.tombstones--
		}
	}
	if !next.absent() {
		d.count++
		if next.rec.Deleted {
			d.tombstones++
		}
	}
}

// holdings is what a replica holds, by unit: the metadata's bucket digest (anti-entropy
// among the metadata set, machine_sync.go) and one digest per shard unit.
type holdings struct {
	layout Layout
	meta   digest
	units  map[Unit]*unitDigest
}

func newHoldings(l Layout) holdings {
	if l == nil {
		l = metaLayout{}
	}
	return holdings{layout: l, units: map[Unit]*unitDigest{}}
}

// update accounts for key's entry changing from old to next.
func (h *holdings) update(key string, old, next *entry) {
	u := h.layout.UnitOf(key)
	if u.Meta() {
		h.meta.update(key, old, next)
		return
	}
	d := h.units[u]
	if d == nil {
		d = &unitDigest{}
		h.units[u] = d
	}
	d.update(key, old, next)
	if d.count == 0 {
		delete(h.units, u)
	}
}

// unit returns the digest of u (zero when the replica holds none of it).
func (h *holdings) unit(u Unit) unitDigest {
	if d := h.units[u]; d != nil {
		return *d
	}
	return unitDigest{}
}
