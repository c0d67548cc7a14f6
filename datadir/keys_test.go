package datadir

import (
	"slices"
	"strings"
	"testing"
)

// TestTypePrefixSelectsOnlyItsType: a type's prefix matches every key of that type and
// family and no key of another type, even one whose name starts with it or an entity id
// that contains the other type's name and separators.
func TestTypePrefixSelectsOnlyItsType(t *testing.T) {
	types := []string{"count", "counter", "count-x", "c", "count counter"}
	var keys []string
	for _, typ := range types {
		keys = append(keys,
			Key(FamilyShard, typ, "7"),
			Key(FamilyEntity, typ, "7", "e1"),
			Key(FamilyEntity, typ, "7", "x\x00counter\x00y"),
			Key(FamilyState, typ, "\x00count\x00"),
			Key(FamilyState, typ, "counter"),
			Key(FamilyHistory, typ, "7", "0000000100000002"),
		)
	}
	for _, typ := range types {
		for _, f := range TypeFamilies {
			p := Prefix(f.Code, typ)
			for _, k := range keys {
				code, kt, ok := SplitKey(k)
				want := ok && code == f.Code && kt == typ
				if got := strings.HasPrefix(k, p); got != want {
					t.Errorf("prefix %q on key %q: match %v, want %v", p, k, got, want)
				}
			}
		}
	}
	for _, k := range []string{"coordinator", Key(FamilyTerm, "counter"), Key(FamilyLease, "shardmesh-shard-counter-7")} {
		if _, _, ok := SplitKey(k); ok {
			t.Errorf("%q split into a type", k)
		}
	}
}

// TestTypeDataPrefixes: internal data always, entity state only when asked; the terms never.
func TestTypeDataPrefixes(t *testing.T) {
	internal := TypeDataPrefixes("counter", false)
	all := TypeDataPrefixes("counter", true)
	want := []string{"rs\x00counter\x00", "re\x00counter\x00", "hi\x00counter\x00", "rm\x00counter\x00"}
	if !slices.Equal(internal, want) || !slices.Equal(all, append(want, "st\x00counter\x00")) {
		t.Errorf("internal %q, all %q", internal, all)
	}
}
