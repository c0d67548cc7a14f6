package datadir

import "strings"

// Sep joins the parts of the store's keys, a family code first. Entity ids come last, so
// they may contain anything; entity type names may not contain Sep (the runtime refuses
// them at registration), so the prefix of a type ends with Sep and never matches a key of
// another type whose name starts with it.
const Sep = "\x00"

// Families of the store's keys, by their code.
const (
	FamilyEntity    = "re" // re␀TYPE␀SHARD␀ENTITY: a remembered entity
	FamilyShard     = "rs" // rs␀TYPE␀SHARD: a shard that has remembered entities
	FamilyState     = "st" // st␀TYPE␀SHARD␀ENTITY: an entity's durable state (application data)
	FamilyHistory   = "hi" // hi␀TYPE␀SHARD␀EPOCH: the placement history (the epoch in 16 hex digits)
	FamilyTerm      = "ct" // ct␀TYPE: the last coordinator term claimed
	FamilyDirective = "op" // op␀KIND…: the operator's directives (drain, pause, pin, stop)
	FamilyLease     = "ls" // ls␀NAME: a shard's lease kept in the store (sharding.use-lease = store)
	FamilyReplicas  = "rc" // rc␀TYPE␀SHARD: where a shard's records live, its replica set (remember.UnitConfig)
	FamilyAudit     = "au" // au␀MILLIS␀ID: an admin call a member took (the time in 16 hex digits)
	FamilyReminder  = "rm" // rm␀TYPE␀SHARD␀ENTITY␀NAME: an entity's durable reminder (the name last)
)

// A shard's records — its remembered entities, its entities' state and reminders — are kept
// together on the shard's replica set (node.StoreLayout); every other family is cluster
// metadata.

// Key joins parts into a key: Key(FamilyState, "counter", "user-1").
func Key(parts ...string) string { return strings.Join(parts, Sep) }

// Prefix is the prefix of every key that starts with parts, and of no other: Key(parts...)
// followed by Sep.
func Prefix(parts ...string) string { return Key(parts...) + Sep }

// TypeFamily is a family of keys kept per entity type (the type second).
type TypeFamily struct {
	Code string // the family's code
	Name string // as tables and JSON name it
	// Internal is sharding's own data (Akka's "not application data"), removed with a type's
	// internal data; the others are application data, removed only when asked for.
	Internal bool
}

// TypeFamilies lists every family of per-type data, in the order tables show them. The
// coordinator terms stay when a type's data is removed: terms only rise, or a later
// coordinator could issue epochs below the fences the state already has.
var TypeFamilies = []TypeFamily{
	{Code: FamilyShard, Name: "remembered shards", Internal: true},
	{Code: FamilyEntity, Name: "remembered entities", Internal: true},
	{Code: FamilyHistory, Name: "placement history", Internal: true},
	{Code: FamilyReminder, Name: "reminders", Internal: true},
	{Code: FamilyState, Name: "entity states", Internal: false},
}

// TypeFamilyOf returns the per-type family of code.
func TypeFamilyOf(code string) (TypeFamily, bool) {
	for _, f := range TypeFamilies {
		if f.Code == code {
			return f, true
		}
	}
	return TypeFamily{}, false
}

// TypeDataPrefixes are the key prefixes of an entity type's internal data and, with state,
// of its entities' durable state, in TypeFamilies' order.
func TypeDataPrefixes(typ string, state bool) []string {
	var out []string
	for _, f := range TypeFamilies {
		if f.Internal || state {
			out = append(out, Prefix(f.Code, typ))
		}
	}
	return out
}

// SplitKey returns the family code and entity type of a key; ok is false for a key that is
// not per type (fewer than two separators, or no type).
func SplitKey(key string) (code, typ string, ok bool) {
	code, rest, ok1 := strings.Cut(key, Sep)
	typ, _, ok2 := strings.Cut(rest, Sep)
	return code, typ, ok1 && ok2 && typ != ""
}
