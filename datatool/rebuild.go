package datatool

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/shardmesh/shardmesh/datadir"
	"github.com/shardmesh/shardmesh/remember"
)

// Verification is what a check of a stopped member's store found: the check's result (the
// store directory, what was checked, what is damaged), whether the store refills from its
// peers when the member starts, and the damaged stores earlier rebuilds kept.
type Verification struct {
	DataDir string `json:"data_dir"`
	Member  string `json:"member,omitempty"`
	Store   bool   `json:"store"` // false: the directory holds no store
	remember.Verified
	Refilling string   `json:"refilling,omitempty"`   // why, when it does
	Aside     []string `json:"moved_aside,omitempty"` // damaged stores kept from earlier rebuilds
}

// Verify checks every file of d's store without opening it (remember.VerifyDir): whether
// the member would start, or which files are damaged. It also tells whether the store is
// still to be refilled (a rebuild the member has not finished) and which damaged stores
// earlier rebuilds kept.
func Verify(d *Dir) (Verification, error) {
	out := Verification{DataDir: d.Path, Member: d.Peer, Verified: remember.Verified{Dir: d.StorePath(), Damaged: []remember.Damage{}}}
	if _, err := os.Stat(d.StorePath()); err == nil {
		out.Store = true
		v, err := remember.VerifyDir(d.StorePath())
		if err != nil {
			return out, err
		}
		out.Verified = v
	}
	if b, err := os.ReadFile(d.dir.File(datadir.RefillFile)); err == nil {
		out.Refilling = string(b)
	}
	aside, _ := filepath.Glob(d.dir.File(datadir.DamagedPrefix + "*"))
	out.Aside = aside
	return out, nil
}

// Rebuilt is what a rebuild did.
type Rebuilt struct {
	DataDir string            `json:"data_dir"`
	Member  string            `json:"member,omitempty"`
	MovedTo string            `json:"moved_to,omitempty"` // where the store went
	Damaged []remember.Damage `json:"damaged"`            // what the check found
}

// Rebuild moves d's store aside (kept, as store.damaged-<time>) and marks it for a refill:
// the member's next process starts with an empty store and refills it from its peers
// before its answers count in reads. It is refused (ErrRefused) unless force when the
// store checks out, and when no other member can hold its data (the member was last Up in
// a cluster of one, or never).
func Rebuild(d *Dir, force bool) (Rebuilt, error) {
	res := Rebuilt{DataDir: d.Path, Member: d.Peer, Damaged: []remember.Damage{}}
	v, err := Verify(d)
	if err != nil {
		return res, err
	}
	res.Damaged = v.Damaged
	if !force {
		switch {
		case !v.Store:
			return res, refused("refused: %s holds no store: nothing to rebuild (a member without one starts empty by itself)", d.Path)
		case len(v.Damaged) == 0:
			return res, refused("refused: the store in %s checks out (%d tables, %d logs): nothing is damaged; pass --force to move it aside and refill it from the peers anyway", d.Path, v.Tables, v.Logs)
		}
		size, err := d.dir.LastClusterSize()
		if err != nil {
			return res, err
		}
		if size <= 1 {
			return res, refused("refused: this member was last Up in a cluster of %d: no other member holds a copy of its data to refill it from; pass --force to move the store aside and start empty anyway (or restore a backup: 'shardctl data restore')", size)
		}
	}
	why := "rebuilt by 'shardctl data rebuild' at " + time.Now().UTC().Format(time.RFC3339)
	if len(v.Damaged) > 0 {
		names := make([]string, len(v.Damaged))
		for i, dmg := range v.Damaged {
			names[i] = dmg.File
		}
		why += ": damaged " + strings.Join(names, ", ")
	}
	if res.MovedTo, err = d.dir.MoveStoreAside(why, time.Now()); err != nil {
		return res, fmt.Errorf("rebuild %s: %w", d.Path, err)
	}
	return res, nil
}
