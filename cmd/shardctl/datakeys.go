package main

import (
	"slices"
	"strings"

	"github.com/shardmesh/shardmesh/remember"
)

// The store's keys, as node/store.go writes them: parts joined with a 0 byte, a family
// code first and the entity type second. Type names cannot contain a 0 byte (the daemon
// refuses them at registration), so "re␀count␀" can never match a key of type "counter":
// every selection below ends the type with the separator.
const keySep = "\x00"

// family is one kind of per-type data in the store.
type family struct {
	code string // the key's first part
	name string // as tables and JSON name it
	// internal is sharding's own data (Akka's "not application data"): removed by
	// remove-internal-data. The others are application data, removed only with
	// --include-state.
	internal bool
}

// families lists every per-type family node/store.go writes, in the order tables show them.
// The coordinator's allocations are not in the store (a new coordinator rebuilds them from
// the regions that register with it); a family for them belongs here once they are.
var families = []family{
	{code: "rs", name: "remembered shards", internal: true},
	{code: "re", name: "remembered entities", internal: true},
	{code: "hi", name: "placement history", internal: true},
	{code: "st", name: "entity states", internal: false},
}

// familyOf returns the family of code.
func familyOf(code string) (family, bool) {
	i := slices.IndexFunc(families, func(f family) bool { return f.code == code })
	if i < 0 {
		return family{}, false
	}
	return families[i], true
}

// typePrefix is the prefix of every key of family code and entity type typ, and of no
// other key.
func typePrefix(code, typ string) string { return code + keySep + typ + keySep }

// splitKey returns the family code and entity type of a store key; ok is false for a key
// that is not per type (no two separators), which inspect lists as other data.
func splitKey(key string) (code, typ string, ok bool) {
	code, rest, ok1 := strings.Cut(key, keySep)
	typ, _, ok2 := strings.Cut(rest, keySep)
	return code, typ, ok1 && ok2 && typ != ""
}

// tally counts the keys of one family (or of other data) and their bytes.
type tally struct {
	Records    int   `json:"records"`    // live records
	Tombstones int   `json:"tombstones"` // deleted records (a passivated entity, …)
	FenceOnly  int   `json:"fence_only"` // keys holding only a fence floor (state loaded, never saved)
	Bytes      int64 `json:"bytes"`      // stored bytes of all of them (remember.Entry.Bytes)
	writers    map[string]int
}

// keys is how many keys the tally holds: what a removal removes.
func (t tally) keys() int { return t.Records + t.Tombstones + t.FenceOnly }

// add counts one entry.
func (t *tally) add(e remember.Entry) {
	switch {
	case e.Version.IsZero():
		t.FenceOnly++
	case e.Deleted:
		t.Tombstones++
	default:
		t.Records++
	}
	t.Bytes += e.Bytes
	if w := e.Version.Writer; w != "" {
		if t.writers == nil {
			t.writers = map[string]int{}
		}
		t.writers[w]++
	}
}

// selection is what a removal of types takes: per type, the families removed.
type selection struct {
	types        []string
	includeState bool
}

// prefixes returns the key prefixes the selection removes, per type in order: the
// internal families, and the entity states with includeState.
func (s selection) prefixes() []selected {
	var out []selected
	for _, typ := range s.types {
		for _, f := range families {
			out = append(out, selected{typ: typ, fam: f, prefix: typePrefix(f.code, typ), removed: f.internal || s.includeState})
		}
	}
	return out
}

// selected is one type's family in a removal: removed, or shown as kept.
type selected struct {
	typ     string
	fam     family
	prefix  string
	removed bool
}
