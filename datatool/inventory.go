package datatool

import (
	"cmp"
	"slices"
	"strconv"
	"strings"

	"github.com/shardmesh/shardmesh/datadir"
	"github.com/shardmesh/shardmesh/node"
	"github.com/shardmesh/shardmesh/remember"
)

// Inventory is what one data directory's store holds.
type Inventory struct {
	DataDir string          `json:"data_dir"`
	Member  string          `json:"member,omitempty"`
	Store   bool            `json:"store"` // false: the directory holds no store yet
	Types   []TypeInventory `json:"types"`
	Other   []OtherData     `json:"other,omitempty"`
	Keys    int             `json:"keys"`
	Bytes   int64           `json:"bytes"`
	// Layout is the store's key layout as the directory's LayoutFile says (0: none yet;
	// see OldLayoutStates).
	Layout int `json:"layout"`
	// Units are the shard units the store holds records of, by type and shard, when asked
	// for (Inspect with units).
	Units []UnitInventory `json:"units,omitempty"`
}

// UnitInventory is what a store holds of one shard unit (a shard's remembered entities
// and entity states): the member is one of the replicas of the shard's replica set.
type UnitInventory struct {
	EntityType string `json:"entity_type"`
	Shard      string `json:"shard"`
	Records    int    `json:"records"`    // live
	Tombstones int    `json:"tombstones"` // deleted, kept until every replica holds them
	FenceOnly  int    `json:"fence_only"`
}

// TypeInventory is one entity type's data in a store.
type TypeInventory struct {
	EntityType         string `json:"entity_type"`
	RememberedShards   int    `json:"remembered_shards"`
	RememberedEntities int    `json:"remembered_entities"`
	EntityStates       int    `json:"entity_states"`
	Tombstones         int    `json:"tombstones"` // deleted records kept for replication (passivated entities, …)
	FenceOnly          int    `json:"fence_only"` // keys that hold only a fence floor
	Keys               int    `json:"keys"`
	Bytes              int64  `json:"bytes"`
	// Units is how many of the type's shards the store holds records of (as a replica).
	Units int `json:"units"`
	// OldLayoutStates are entity states in the layout before replica sets (st␀TYPE␀ENTITY):
	// a daemon refuses the store until 'shardctl data upgrade' moves them under their shards.
	OldLayoutStates int `json:"old_layout_states"`
}

// OtherData is data not kept per entity type (coordinator terms, directives, leases) or of
// a kind this release does not know, by the key's first part.
type OtherData struct {
	Prefix string `json:"prefix"`
	Keys   int    `json:"keys"`
	Bytes  int64  `json:"bytes"`
}

// Inspect inventories the store of d (an Inventory without types when it has none); with
// units, the shard units it holds too.
func Inspect(d *Dir, units bool) (Inventory, error) {
	inv := Inventory{DataDir: d.Path, Member: d.Peer, Store: d.Store != nil, Types: []TypeInventory{}}
	layout, err := d.layout()
	if err != nil {
		return inv, err
	}
	inv.Layout = layout
	if d.Store == nil {
		return inv, nil
	}
	types, other, us, err := inspectStore(d.Store)
	if err != nil {
		return inv, err
	}
	inv.Types, inv.Other = types, other
	if units {
		inv.Units = us
	}
	for _, t := range inv.Types {
		inv.Keys, inv.Bytes = inv.Keys+t.Keys, inv.Bytes+t.Bytes
	}
	for _, o := range inv.Other {
		inv.Keys, inv.Bytes = inv.Keys+o.Keys, inv.Bytes+o.Bytes
	}
	return inv, nil
}

// inspectStore walks every key of a store and counts it by type and family, and by shard
// unit (node.StoreLayout).
func inspectStore(l *remember.Local) ([]TypeInventory, []OtherData, []UnitInventory, error) {
	perType := map[string]map[string]*tally{}
	other := map[string]*OtherData{}
	perUnit := map[remember.Unit]*tally{}
	old := map[string]int{}
	err := l.Entries("", func(e remember.Entry) error {
		code, typ, ok := datadir.SplitKey(e.Key)
		if _, known := datadir.TypeFamilyOf(code); ok && known {
			if u := (node.StoreLayout{}).UnitOf(e.Key); !u.Meta() {
				if perUnit[u] == nil {
					perUnit[u] = &tally{}
				}
				perUnit[u].add(e)
			} else if _, isOld := node.OldStateKey(e.Key); isOld {
				old[typ]++
			}
			if perType[typ] == nil {
				perType[typ] = map[string]*tally{}
			}
			t := perType[typ][code]
			if t == nil {
				t = &tally{}
				perType[typ][code] = t
			}
			t.add(e)
			return nil
		}
		o := other[code]
		if o == nil {
			p := code
			if len(p) > 32 {
				p = p[:32] + "…"
			}
			o = &OtherData{Prefix: strconv.Quote(p)}
			other[code] = o
		}
		o.Keys++
		o.Bytes += e.Bytes
		return nil
	})
	if err != nil {
		return nil, nil, nil, err
	}
	var units []UnitInventory
	unitsOf := map[string]int{}
	for u, t := range perUnit {
		units = append(units, UnitInventory{EntityType: u.Type, Shard: u.Shard, Records: t.records, Tombstones: t.tombstones, FenceOnly: t.fenceOnly})
		unitsOf[u.Type]++
	}
	slices.SortFunc(units, func(a, b UnitInventory) int {
		return cmp.Or(strings.Compare(a.EntityType, b.EntityType), compareShardIDs(a.Shard, b.Shard))
	})
	var types []TypeInventory
	for typ, fams := range perType {
		ti := TypeInventory{EntityType: typ, Units: unitsOf[typ], OldLayoutStates: old[typ]}
		for code, t := range fams {
			switch code {
			case datadir.FamilyShard:
				ti.RememberedShards = t.records
			case datadir.FamilyEntity:
				ti.RememberedEntities = t.records
			case datadir.FamilyState:
				ti.EntityStates = t.records
			}
			ti.Tombstones += t.tombstones
			ti.FenceOnly += t.fenceOnly
			ti.Keys += t.keys()
			ti.Bytes += t.bytes
		}
		types = append(types, ti)
	}
	slices.SortFunc(types, func(a, b TypeInventory) int { return strings.Compare(a.EntityType, b.EntityType) })
	var others []OtherData
	for _, o := range other {
		others = append(others, *o)
	}
	slices.SortFunc(others, func(a, b OtherData) int { return strings.Compare(a.Prefix, b.Prefix) })
	return types, others, units, nil
}

// compareShardIDs orders shard ids numerically when both are decimal numbers, else as text.
func compareShardIDs(a, b string) int {
	x, errA := strconv.Atoi(a)
	y, errB := strconv.Atoi(b)
	if errA == nil && errB == nil {
		return cmp.Compare(x, y)
	}
	return strings.Compare(a, b)
}

// StoredTypes lists the entity types with data in any of the directories.
func StoredTypes(dirs []*Dir) []string {
	var out []string
	for _, d := range dirs {
		if d.Store == nil {
			continue
		}
		if types, _, _, err := inspectStore(d.Store); err == nil {
			for _, t := range types {
				if !slices.Contains(out, t.EntityType) {
					out = append(out, t.EntityType)
				}
			}
		}
	}
	slices.Sort(out)
	return out
}

// tally counts the keys of one family (or of other data) and their bytes.
type tally struct {
	records    int   // live records
	tombstones int   // deleted records (a passivated entity, …)
	fenceOnly  int   // keys holding only a fence floor (state loaded, never saved)
	bytes      int64 // stored bytes of all of them (remember.Entry.Bytes)
	writers    map[string]int
}

// keys is how many keys the tally holds: what a removal removes.
func (t tally) keys() int { return t.records + t.tombstones + t.fenceOnly }

// add counts one entry.
func (t *tally) add(e remember.Entry) {
	switch {
	case e.Version.IsZero():
		t.fenceOnly++
	case e.Deleted:
		t.tombstones++
	default:
		t.records++
	}
	t.bytes += e.Bytes
	if w := e.Version.Writer; w != "" {
		if t.writers == nil {
			t.writers = map[string]int{}
		}
		t.writers[w]++
	}
}
