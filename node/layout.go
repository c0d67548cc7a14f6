package node

import (
	"slices"
	"strings"

	"github.com/shardmesh/shardmesh/datadir"
	"github.com/shardmesh/shardmesh/remember"
)

// StoreLayout maps the store's keys to replica-set units: a shard's remembered entities
// (re␀TYPE␀SHARD␀ENTITY), its entities' reminders (rm␀TYPE␀SHARD␀ENTITY␀NAME) and their
// durable state (st␀TYPE␀SHARD␀ENTITY) are the shard's unit, kept on its replica set; every
// other key (terms, directives, placement history, leases, audit, remembered shards, the
// units' configurations) is cluster metadata.
type StoreLayout struct{}

var _ remember.Layout = StoreLayout{}

// unitFamilies are the families of keys that belong to shards.
var unitFamilies = []string{datadir.FamilyEntity, datadir.FamilyReminder, datadir.FamilyState}

// unitFamily reports whether keys of family code belong to shards.
func unitFamily(code string) bool { return slices.Contains(unitFamilies, code) }

// UnitOf returns key's unit.
func (StoreLayout) UnitOf(key string) remember.Unit {
	code, rest, ok := strings.Cut(key, datadir.Sep)
	if !ok || !unitFamily(code) {
		return remember.Unit{}
	}
	typ, rest, ok1 := strings.Cut(rest, datadir.Sep)
	shard, _, ok2 := strings.Cut(rest, datadir.Sep)
	if !ok1 || !ok2 || typ == "" {
		return remember.Unit{}
	}
	return remember.Unit{Type: typ, Shard: shard}
}

// UnitOfPrefix returns the unit of every key under prefix; false when they span shards.
func (l StoreLayout) UnitOfPrefix(prefix string) (remember.Unit, bool) {
	parts := strings.Split(prefix, datadir.Sep)
	if len(parts) == 1 { // no separator: a family's code, or part of one
		for _, code := range unitFamilies {
			if strings.HasPrefix(code, prefix) || strings.HasPrefix(prefix, code) {
				return remember.Unit{}, false
			}
		}
		return remember.Unit{}, true
	}
	if !unitFamily(parts[0]) {
		return remember.Unit{}, true
	}
	if len(parts) < 4 { // the type and the shard not both complete
		return remember.Unit{}, false
	}
	return remember.Unit{Type: parts[1], Shard: parts[2]}, parts[1] != ""
}

// Prefixes returns the key prefixes of unit u's records.
func (StoreLayout) Prefixes(u remember.Unit) []string {
	out := make([]string, len(unitFamilies))
	for i, code := range unitFamilies {
		out[i] = datadir.Prefix(code, u.Type, u.Shard)
	}
	return out
}

// ConfigKey returns the metadata key of u's replica configuration.
func (StoreLayout) ConfigKey(u remember.Unit) string {
	return datadir.Key(datadir.FamilyReplicas, u.Type, u.Shard)
}
