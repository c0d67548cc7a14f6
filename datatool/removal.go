package datatool

import (
	"fmt"
	"slices"

	"github.com/shardmesh/shardmesh/datadir"
	"github.com/shardmesh/shardmesh/remember"
)

// Selection is what a removal of entity types takes: their internal families, and their
// entity states with IncludeState.
type Selection struct {
	Types        []string
	IncludeState bool
}

// selected is one type's family in a removal: removed, or shown as kept.
type selected struct {
	typ     string
	fam     datadir.TypeFamily
	prefix  string
	removed bool
}

// families returns every family of the selected types, in order, with the key prefix of
// each and whether it is removed.
func (s Selection) families() []selected {
	var out []selected
	for _, typ := range s.Types {
		for _, f := range datadir.TypeFamilies {
			out = append(out, selected{typ: typ, fam: f, prefix: datadir.Prefix(f.Code, typ), removed: f.Internal || s.IncludeState})
		}
	}
	return out
}

// RemovalItem is one type's family in one directory: removed (or, in a plan, to be
// removed), or kept.
type RemovalItem struct {
	EntityType string `json:"entity_type"`
	Data       string `json:"data"` // "remembered shards", "remembered entities", "placement history", "reminders", "entity states"
	Keys       int    `json:"keys"`
	Bytes      int64  `json:"bytes"`
	Removed    bool   `json:"removed"` // false: kept (entity states without IncludeState)
	prefix     string
}

// DirRemoval is what a removal does in one data directory.
type DirRemoval struct {
	DataDir     string        `json:"data_dir"`
	Member      string        `json:"member,omitempty"`
	Store       bool          `json:"store"` // false: the directory holds no store
	Items       []RemovalItem `json:"items"`
	Backup      string        `json:"backup,omitempty"`
	BackupBytes int64         `json:"backup_bytes,omitempty"`
}

// Removes reports whether anything is to be removed in the directory.
func (dr DirRemoval) Removes() bool {
	return slices.ContainsFunc(dr.Items, func(it RemovalItem) bool { return it.Removed })
}

// Removed totals the keys and bytes removed in the directory.
func (dr DirRemoval) Removed() (keys int, bytes int64) {
	for _, it := range dr.Items {
		if it.Removed {
			keys, bytes = keys+it.Keys, bytes+it.Bytes
		}
	}
	return keys, bytes
}

// Removal is a removal of entity types from data directories: planned (a dry run), or done.
type Removal struct {
	DryRun       bool         `json:"dry_run"`
	Types        []string     `json:"types"`
	IncludeState bool         `json:"include_state"`
	DataDirs     []DirRemoval `json:"data_dirs"`
	RemovedKeys  int          `json:"removed_keys"` // with dry_run: that would be removed
	RemovedBytes int64        `json:"removed_bytes"`
	UnknownTypes []string     `json:"unknown_types"` // named but stored in none of the directories
	// OtherWriters are members, not among the directories' own, that wrote some of the
	// removed data: their directories hold it too, and anti-entropy brings it back from
	// there unless it is removed there as well.
	OtherWriters []string `json:"other_writers"`
}

// PlanRemoval counts, in every directory, the keys sel removes and keeps. It changes
// nothing: DirRemoval.Remove carries the plan of each directory out. DryRun is the
// caller's to set.
func PlanRemoval(dirs []*Dir, sel Selection) (*Removal, error) {
	rep := &Removal{Types: sel.Types, IncludeState: sel.IncludeState, UnknownTypes: []string{}, OtherWriters: []string{}}
	found := map[string]bool{}
	ownPeers := map[string]bool{}
	writers := map[string]int{}
	for _, d := range dirs {
		dr := DirRemoval{DataDir: d.Path, Member: d.Peer, Store: d.Store != nil, Items: []RemovalItem{}}
		if d.Peer != "" {
			ownPeers[d.Peer] = true
		}
		if d.Store != nil {
			items, ws, err := planStore(d.Store, sel)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", d.Path, err)
			}
			dr.Items = items
			for w, n := range ws {
				writers[w] += n
			}
		}
		for _, it := range dr.Items {
			found[it.EntityType] = true
		}
		n, b := dr.Removed()
		rep.RemovedKeys, rep.RemovedBytes = rep.RemovedKeys+n, rep.RemovedBytes+b
		rep.DataDirs = append(rep.DataDirs, dr)
	}
	for _, t := range sel.Types {
		if !found[t] {
			rep.UnknownTypes = append(rep.UnknownTypes, t)
		}
	}
	for w, n := range writers {
		if !ownPeers[w] {
			rep.OtherWriters = append(rep.OtherWriters, fmt.Sprintf("%s (%d keys)", w, n))
		}
	}
	slices.Sort(rep.OtherWriters)
	return rep, nil
}

// planStore counts, in one store, the keys sel removes and keeps, and who wrote those it
// removes.
func planStore(l *remember.Local, sel Selection) ([]RemovalItem, map[string]int, error) {
	var items []RemovalItem
	writers := map[string]int{}
	for _, s := range sel.families() {
		var t tally
		if err := l.Entries(s.prefix, func(e remember.Entry) error { t.add(e); return nil }); err != nil {
			return nil, nil, err
		}
		if t.keys() == 0 {
			continue
		}
		if s.removed {
			for w, n := range t.writers {
				writers[w] += n
			}
		}
		items = append(items, RemovalItem{EntityType: s.typ, Data: s.fam.Name, Keys: t.keys(), Bytes: t.bytes, Removed: s.removed, prefix: s.prefix})
	}
	return items, writers, nil
}

// Remove removes what the plan of this directory (PlanRemoval) selects from d's store,
// calling progress after each batch of keys of an item. It returns a warning for each item
// whose removed keys differ from the plan's count (which cannot happen while d is held).
// A removal that fails part way says how far it got; restoring the backup starts again.
func (dr DirRemoval) Remove(d *Dir, progress func(it RemovalItem, done int)) (warnings []string, err error) {
	for _, it := range dr.Items {
		if !it.Removed {
			continue
		}
		n, err := d.Store.DeletePrefix(it.prefix, func(done int) { progress(it, done) })
		if err != nil {
			return warnings, fmt.Errorf("%s: removing %s %s stopped after %d keys: %w (restore the backup with 'shardctl data restore --replace' to start again)", d.Path, it.EntityType, it.Data, n, err)
		}
		if n != it.Keys {
			warnings = append(warnings, fmt.Sprintf("%s: %s %s: removed %d keys, the plan counted %d", d.Path, it.EntityType, it.Data, n, it.Keys))
		}
	}
	return warnings, nil
}
