package datatool

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/shardmesh/shardmesh/datadir"
	"github.com/shardmesh/shardmesh/node"
	"github.com/shardmesh/shardmesh/remember"
	"github.com/shardmesh/shardmesh/shard"
)

// The store's key layout changed with replica sets: entity state moved from st␀TYPE␀ENTITY
// (layout 1) to st␀TYPE␀SHARD␀ENTITY (layout 2, datadir.StoreLayoutVersion), under its shard,
// so that it lives on the shard's replica set. A daemon refuses a store that still holds
// layout-1 keys (node.ErrOldStoreLayout); Upgrade moves them on a stopped member's
// directory.

// ShardOf maps an entity of entity type typ to its shard: the type's extractor, exactly as
// the cluster runs it, or the state lands under a shard the entity is never looked up in.
type ShardOf func(typ string, entity shard.EntityID) shard.ID

// ExtractorShardOf is ShardOf with one extractor for every type: Akka's default
// (shard.NewHashCodeExtractor) or Shardcake's, over the cluster's number-of-shards.
func ExtractorShardOf(ex shard.Extractor) ShardOf {
	return func(_ string, e shard.EntityID) shard.ID { return ex.ShardID(e) }
}

// UpgradeResult is what Upgrade found and did in one data directory.
type UpgradeResult struct {
	DataDir string `json:"data_dir"`
	Member  string `json:"member,omitempty"`
	// Found is how many keys of the old layout the store held, of Types.
	Found int      `json:"found"`
	Types []string `json:"types"`
	// Moved is how many it moved under their shards (0 with a dry run).
	Moved int `json:"moved"`
	// Layout is the layout the directory is in now, as its LayoutFile says (with a dry
	// run: as it was; 0: no LayoutFile).
	Layout int  `json:"layout"`
	DryRun bool `json:"dry_run,omitempty"`
}

// Upgrade moves the entity state of layout 1 in d's store under its shards, as shardOf
// maps them, calling progress with the running count of keys moved (of found); then it
// writes the LayoutFile, after which a daemon opens the directory. Run on a directory
// already upgraded it moves nothing; stopped halfway, it moves the rest when run again.
// A LayoutFile of a newer layout is refused (ErrBadInput); with dryRun it only counts.
func Upgrade(d *Dir, shardOf ShardOf, dryRun bool, progress func(moved, found int)) (UpgradeResult, error) {
	res := UpgradeResult{DataDir: d.Path, Member: d.Peer, Types: []string{}, DryRun: dryRun}
	layout, err := d.layout()
	if err != nil {
		return res, err
	}
	res.Layout = layout
	if layout > datadir.StoreLayoutVersion {
		return res, badInput("%s is in store layout %d, newer than this release's %d: use the release that wrote it", d.Path, layout, datadir.StoreLayoutVersion)
	}
	if d.Store != nil {
		if res.Types, res.Found, err = oldStateKeys(d.Store); err != nil {
			return res, err
		}
	}
	if dryRun {
		return res, nil
	}
	if res.Found > 0 {
		prefix := datadir.Prefix(datadir.FamilyState)
		res.Moved, err = d.Store.Rekey(prefix, func(key string) (string, bool) {
			typ, ok := node.OldStateKey(key)
			if !ok {
				return "", false
			}
			e := shard.EntityID(strings.TrimPrefix(key, datadir.Prefix(datadir.FamilyState, typ)))
			return node.StateKey(typ, shardOf(typ, e), e), true
		}, func(moved int) {
			if progress != nil {
				progress(moved, res.Found)
			}
		})
		if err != nil {
			return res, fmt.Errorf("%s: %w (run the upgrade again: it moves what is left)", d.Path, err)
		}
	}
	if layout == 0 && d.Store != nil {
		// A store from before replica sets keeps its metadata on every member, in no group.
		if err := datadir.MarkMetaSeed(d.Path, "upgraded from a release before replica sets"); err != nil {
			return res, err
		}
	}
	if err := os.WriteFile(d.dir.File(datadir.LayoutFile), []byte(strconv.Itoa(datadir.StoreLayoutVersion)+"\n"), 0o600); err != nil {
		return res, fmt.Errorf("write %s: %w", d.dir.File(datadir.LayoutFile), err)
	}
	res.Layout = datadir.StoreLayoutVersion
	return res, nil
}

// layout returns the store layout d's LayoutFile names; 0 without one.
func (d *Dir) layout() (int, error) {
	path := d.dir.File(datadir.LayoutFile)
	b, err := os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return 0, nil
	case err != nil:
		return 0, err
	}
	v, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || v < 1 {
		return 0, badInput("%s holds %q, not a store layout", path, firstLine(string(b)))
	}
	return v, nil
}

// oldStateKeys counts the entity state keys of layout 1 in l and names their types.
func oldStateKeys(l *remember.Local) (types []string, n int, err error) {
	err = l.Entries(datadir.Prefix(datadir.FamilyState), func(e remember.Entry) error {
		if typ, ok := node.OldStateKey(e.Key); ok {
			n++
			if !slices.Contains(types, typ) {
				types = append(types, typ)
			}
		}
		return nil
	})
	slices.Sort(types)
	if types == nil {
		types = []string{}
	}
	return types, n, err
}

// firstLine shortens file content for a message: its first line, at most 40 bytes.
func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	if len(s) > 40 {
		s = s[:40] + "…"
	}
	return s
}
