package main

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/shardmesh/shardmesh/remember"
)

// dataCommand is data inspect|backup|restore (offline) and the networked commands given
// (data remove, through a running cluster).
func dataCommand(networked ...*cli.Command) *cli.Command {
	return &cli.Command{
		Name:  "data",
		Usage: "inspect, back up and restore stopped members' data directories; remove a stopped type's data",
		Description: `Offline tools for the store (remembered shards and entities, durable entity state) in
a stopped member's data directory: inspect, backup, restore. They refuse (exit code 4) a
directory a running sharddaemon holds. 'data remove' removes a stopped type's data through
a running cluster; to remove it from stopped members' directories, see 'shardctl
remove-internal-data'.
Example:
   shardctl data inspect --data-dir /tmp/a
   shardctl data backup --data-dir /tmp/a --out a.backup
   shardctl data restore --data-dir /tmp/a --in a.backup --replace`,
		Flags:           []cli.Flag{&cli.BoolFlag{Name: "json", Hidden: true}}, // the subcommands have it
		HideHelpCommand: true,
		// Without a known subcommand: help, or one line naming the unknown one (exit 2).
		Action: func(c *cli.Context) error {
			if c.Args().Len() == 0 {
				return cli.ShowSubcommandHelp(c)
			}
			return usagef("unknown command 'data %s' (inspect, backup, restore, remove; see 'shardctl data --help')", truncate(c.Args().First(), 80))
		},
		Subcommands: append([]*cli.Command{
			dataInspectCommand(),
			dataBackupCommand(),
			dataRestoreCommand(),
		}, networked...),
	}
}

// inventory is what data inspect reports of one data directory.
type inventory struct {
	DataDir string          `json:"data_dir"`
	Member  string          `json:"member,omitempty"`
	Store   bool            `json:"store"` // false: the directory holds no store yet
	Types   []typeInventory `json:"types"`
	Other   []otherData     `json:"other,omitempty"`
	Keys    int             `json:"keys"`
	Bytes   int64           `json:"bytes"`
}

// typeInventory is one entity type's data in a directory.
type typeInventory struct {
	EntityType         string `json:"entity_type"`
	RememberedShards   int    `json:"remembered_shards"`
	RememberedEntities int    `json:"remembered_entities"`
	EntityStates       int    `json:"entity_states"`
	Tombstones         int    `json:"tombstones"` // deleted records kept for replication (passivated entities, …)
	FenceOnly          int    `json:"fence_only"` // keys that hold only a fence floor
	Keys               int    `json:"keys"`
	Bytes              int64  `json:"bytes"`
}

// otherData is data this shardctl does not know how to attribute to a type, by the key's
// first part.
type otherData struct {
	Prefix string `json:"prefix"`
	Keys   int    `json:"keys"`
	Bytes  int64  `json:"bytes"`
}

// inspectStore walks every key of a store and counts it by type and family.
func inspectStore(l *remember.Local) ([]typeInventory, []otherData, error) {
	perType := map[string]map[string]*tally{}
	other := map[string]*otherData{}
	err := l.Entries("", func(e remember.Entry) error {
		code, typ, ok := splitKey(e.Key)
		if _, known := familyOf(code); ok && known {
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
			o = &otherData{Prefix: strconv.Quote(truncate(code, 32))}
			other[code] = o
		}
		o.Keys++
		o.Bytes += e.Bytes
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	var types []typeInventory
	for typ, fams := range perType {
		ti := typeInventory{EntityType: typ}
		for code, t := range fams {
			switch code {
			case "rs":
				ti.RememberedShards = t.Records
			case "re":
				ti.RememberedEntities = t.Records
			case "st":
				ti.EntityStates = t.Records
			}
			ti.Tombstones += t.Tombstones
			ti.FenceOnly += t.FenceOnly
			ti.Keys += t.keys()
			ti.Bytes += t.Bytes
		}
		types = append(types, ti)
	}
	slices.SortFunc(types, func(a, b typeInventory) int { return strings.Compare(a.EntityType, b.EntityType) })
	var others []otherData
	for _, o := range other {
		others = append(others, *o)
	}
	slices.SortFunc(others, func(a, b otherData) int { return strings.Compare(a.Prefix, b.Prefix) })
	return types, others, nil
}

func dataInspectCommand() *cli.Command {
	return &cli.Command{
		Name:  "inspect",
		Usage: "list what a stopped member's store holds, per entity type",
		Description: `For each --data-dir (a stopped member's data directory; repeatable), per entity type: the
remembered shards, remembered entities and entity-state records stored, the tombstones
(deleted records kept so replicas agree: passivated entities, …), keys holding only a fence
floor (an entity that loaded its state but never saved one), and the keys and bytes of it
all (keys and values as stored, before Badger's compression). Data of a kind this shardctl
does not know is listed as other. Refused (exit code 4) while a sharddaemon holds a
directory; ask a running cluster with 'shardctl stats' instead.
Example:
   shardctl data inspect --data-dir /tmp/a --data-dir /tmp/b
   shardctl data inspect --data-dir /tmp/a --json`,
		Flags: []cli.Flag{dataDirFlag("a stopped member's data `DIR` (repeatable)")},
		Action: func(c *cli.Context) error {
			if _, err := positional(c, "", 0); err != nil {
				return err
			}
			paths, err := dataDirs(c, 0)
			if err != nil {
				return err
			}
			dirs, err := openAllStopped(paths, false)
			if err != nil {
				return err
			}
			defer closeAll(dirs)
			var out []inventory
			for _, d := range dirs {
				inv := inventory{DataDir: d.path, Member: d.peer, Store: d.store != nil, Types: []typeInventory{}}
				if d.store != nil {
					if inv.Types, inv.Other, err = inspectStore(d.store); err != nil {
						return cli.Exit(fmt.Sprintf("%s: %v", d.path, err), exitFailed)
					}
				}
				for _, t := range inv.Types {
					inv.Keys, inv.Bytes = inv.Keys+t.Keys, inv.Bytes+t.Bytes
				}
				for _, o := range inv.Other {
					inv.Keys, inv.Bytes = inv.Keys+o.Keys, inv.Bytes+o.Bytes
				}
				out = append(out, inv)
			}
			if c.Bool("json") {
				return printJSON(c.App.Writer, struct {
					DataDirs []inventory `json:"data_dirs"`
				}{out})
			}
			for i, inv := range out {
				if i > 0 {
					fmt.Fprintln(c.App.Writer)
				}
				printInventory(c.App.Writer, inv)
			}
			return nil
		},
	}
}

func printInventory(w io.Writer, inv inventory) {
	head := inv.DataDir
	if inv.Member != "" {
		head += " (member " + shortID(inv.Member) + ")"
	}
	if !inv.Store {
		fmt.Fprintf(w, "%s: no store yet\n", head)
		return
	}
	fmt.Fprintf(w, "%s: %d keys, %d bytes\n", head, inv.Keys, inv.Bytes)
	if len(inv.Types) == 0 && len(inv.Other) == 0 {
		fmt.Fprintln(w, "  (empty)")
		return
	}
	t := newTable(w, "TYPE", "REMEMBERED SHARDS", "REMEMBERED ENTITIES", "ENTITY STATES", "TOMBSTONES", "FENCE-ONLY", "KEYS", "BYTES")
	for _, ti := range inv.Types {
		t.row(ti.EntityType, strconv.Itoa(ti.RememberedShards), strconv.Itoa(ti.RememberedEntities), strconv.Itoa(ti.EntityStates),
			strconv.Itoa(ti.Tombstones), strconv.Itoa(ti.FenceOnly), strconv.Itoa(ti.Keys), strconv.FormatInt(ti.Bytes, 10))
	}
	for _, o := range inv.Other {
		t.row("(other "+o.Prefix+")", "-", "-", "-", "-", "-", strconv.Itoa(o.Keys), strconv.FormatInt(o.Bytes, 10))
	}
	t.flush()
}
