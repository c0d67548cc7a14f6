package node

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/shardmesh/shardmesh/datadir"
	"github.com/shardmesh/shardmesh/remember"
)

// ErrOldStoreLayout says the store keeps entity state in the layout of releases before replica
// sets (st␀TYPE␀ENTITY); `shardctl data upgrade` moves it under its shards.
var ErrOldStoreLayout = errors.New("the store holds entity state in the layout of releases before replica sets")

// upgradeStoreLayout checks the layout of the store's keys before the store opens: a new
// store, or one of this layout (datadir.LayoutFile), opens; one from before replica sets
// that holds entity state in the old layout does not (the state would not be found under
// its shard), with an error that says what to run. It records the layout once checked.
func (n *Node) upgradeStoreLayout() error {
	path := n.dir.File(datadir.LayoutFile)
	b, err := os.ReadFile(path)
	switch {
	case err == nil:
		v, perr := strconv.Atoi(strings.TrimSpace(string(b)))
		if perr != nil || v != datadir.StoreLayoutVersion {
			return fmt.Errorf("%s says store layout %q; this release reads layout %d (a newer release wrote it?)", path, strings.TrimSpace(string(b)), datadir.StoreLayoutVersion)
		}
		return nil
	case !errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("read %s: %w", path, err)
	}
	if _, err := os.Stat(n.dir.Store()); err == nil {
		types, keys, err := oldLayoutState(n.dir.Store())
		if err != nil {
			return nil // the store's own open reports what is wrong with it
		}
		if keys > 0 {
			return fmt.Errorf("%w: %d keys of entity types %s in %s; stop every member and run `shardctl data upgrade --data-dir DIR` on each member's data directory, then start them: %s",
				ErrOldStoreLayout, keys, strings.Join(types, ", "), n.dir.Store(), "the state moves under its shards")
		}
		// Its metadata is on every member, in no metadata group: it seeds the group.
		if err := datadir.MarkMetaSeed(n.dir.Path(), "upgraded from a release before replica sets"); err != nil {
			return err
		}
	}
	return os.WriteFile(path, []byte(strconv.Itoa(datadir.StoreLayoutVersion)+"\n"), 0o600)
}

// oldLayoutState counts the entity state keys of store dir in the layout before replica
// sets, and names their types.
func oldLayoutState(dir string) (types []string, keys int, err error) {
	l, err := remember.OpenLocal(dir)
	if err != nil {
		return nil, 0, err
	}
	defer l.Close()
	err = l.Entries(datadir.Prefix(datadir.FamilyState), func(e remember.Entry) error {
		if typ, ok := OldStateKey(e.Key); ok {
			keys++
			if !slices.Contains(types, typ) {
				types = append(types, typ)
			}
		}
		return nil
	})
	return types, keys, err
}

// OldStateKey reports whether key is an entity state key of the layout before replica
// sets (st␀TYPE␀ENTITY: no shard, so no separator after the type), and its type.
func OldStateKey(key string) (typ string, ok bool) {
	rest, ok := strings.CutPrefix(key, datadir.Prefix(datadir.FamilyState))
	if !ok {
		return "", false
	}
	typ, entity, ok := strings.Cut(rest, datadir.Sep)
	return typ, ok && typ != "" && !strings.Contains(entity, datadir.Sep)
}
