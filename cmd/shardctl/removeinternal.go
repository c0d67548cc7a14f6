package main

import (
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/pnet"
	"github.com/multiformats/go-multiaddr"
	"github.com/urfave/cli/v2"
	"golang.org/x/term"

	"github.com/shardmesh/shardmesh/admin"
	"github.com/shardmesh/shardmesh/p2p"
	"github.com/shardmesh/shardmesh/remember"
)

// defaultProbeTimeout bounds each try to reach a member before a removal.
const defaultProbeTimeout = 2 * time.Second

func removeInternalDataCommand() *cli.Command {
	return &cli.Command{
		Name:      "remove-internal-data",
		Usage:     "remove the sharding data of entity types from stopped members' data directories",
		ArgsUsage: "TYPE...",
		Description: `Removes the internal sharding data of exactly the named entity types (Akka's
RemoveInternalClusterShardingData) from the stores in the --data-dir directories (repeatable;
name every member's directory: each holds a replica, and anti-entropy brings removed data
back from a member that still has it). Internal data is the remembered shards and remembered
entities; the entities' durable state is application data and is kept unless
--include-state. Other types' data is never touched.

Works on stopped members only: refused (exit code 4) while a sharddaemon holds a directory,
or when a member answers at an address in a directory's addrs file or given with --node
(pass the cluster's other members' addresses there: a stopped member keeps no list of them).
--dry-run says what would be removed, per directory and type, and changes nothing. Before
removing, each directory's store is backed up to DIR/backups/store-<time>.backup (or into
--backup-dir) unless --no-backup; 'shardctl data restore' loads such a backup. Asks for
confirmation unless --yes. Progress goes to stderr.
Example:
   shardctl remove-internal-data --data-dir /tmp/a --data-dir /tmp/b --dry-run counter
   shardctl remove-internal-data --data-dir /tmp/a --data-dir /tmp/b --node /ip4/10.0.0.3/tcp/4001/p2p/12D3KooW... --yes counter
   shardctl remove-internal-data --data-dir /tmp/a --include-state --no-backup --yes --json counter`,
		Flags: []cli.Flag{
			dataDirFlag("a stopped member's data `DIR` (repeatable; name every member's)"),
			&cli.BoolFlag{Name: "dry-run", Usage: "say what would be removed; change nothing"},
			&cli.BoolFlag{Name: "yes", Aliases: []string{"y"}, Usage: "do not ask for confirmation"},
			&cli.BoolFlag{Name: "include-state", Usage: "remove the types' durable entity state (application data) too"},
			&cli.BoolFlag{Name: "no-backup", Usage: "do not back up the stores before removing"},
			&cli.StringFlag{Name: "backup-dir", Usage: "write the backups into `DIR` (default: each data directory's backups/)"},
			&cli.StringSliceFlag{Name: "node", Usage: "`MULTIADDR` of another member to check is stopped (repeatable)"},
			&cli.StringFlag{Name: "cluster-key", Usage: "the cluster's key `FILE`, to reach members of a cluster that has one", EnvVars: []string{"SHARDMESH_CLUSTER_KEY"}},
			&cli.DurationFlag{Name: "probe-timeout", Usage: "how long to try each member address", Value: defaultProbeTimeout},
		},
		Action: removeInternalData,
	}
}

// removalItem is one type's family in one directory: removed (or, with --dry-run, to be
// removed), or kept.
type removalItem struct {
	EntityType string `json:"entity_type"`
	Data       string `json:"data"` // "remembered shards", "remembered entities", "entity states"
	Keys       int    `json:"keys"`
	Bytes      int64  `json:"bytes"`
	Removed    bool   `json:"removed"` // false: kept (entity states without --include-state)
	prefix     string
}

// dirRemoval is what a removal does in one data directory.
type dirRemoval struct {
	DataDir     string        `json:"data_dir"`
	Member      string        `json:"member,omitempty"`
	Store       bool          `json:"store"` // false: the directory holds no store
	Items       []removalItem `json:"items"`
	Backup      string        `json:"backup,omitempty"`
	BackupBytes int64         `json:"backup_bytes,omitempty"`
}

// removalReport is remove-internal-data --json.
type removalReport struct {
	DryRun       bool         `json:"dry_run"`
	Types        []string     `json:"types"`
	IncludeState bool         `json:"include_state"`
	DataDirs     []dirRemoval `json:"data_dirs"`
	RemovedKeys  int          `json:"removed_keys"` // with dry_run: that would be removed
	RemovedBytes int64        `json:"removed_bytes"`
	UnknownTypes []string     `json:"unknown_types"` // named but stored in none of the directories
	// OtherWriters are members, not among the directories' own, that wrote some of the
	// removed data: their directories hold it too.
	OtherWriters []string `json:"other_writers"`
}

// planRemoval counts, in one store, the keys the selection removes and keeps, calling each
// (if set) with every key it would remove.
func planRemoval(l *remember.Local, sel selection, each func(key string)) ([]removalItem, map[string]int, error) {
	var items []removalItem
	writers := map[string]int{}
	for _, s := range sel.prefixes() {
		var t tally
		err := l.Entries(s.prefix, func(e remember.Entry) error {
			t.add(e)
			if s.removed && each != nil {
				each(e.Key)
			}
			return nil
		})
		if err != nil {
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
		items = append(items, removalItem{EntityType: s.typ, Data: s.fam.name, Keys: t.keys(), Bytes: t.Bytes, Removed: s.removed, prefix: s.prefix})
	}
	return items, writers, nil
}

// removeItems removes the planned items from one store, reporting progress.
func removeItems(l *remember.Local, dir string, items []removalItem, progress io.Writer) error {
	for _, it := range items {
		if !it.Removed {
			continue
		}
		n, err := l.DeletePrefix(it.prefix, func(done int) {
			fmt.Fprintf(progress, "%s: %s %s: removed %d of %d keys\n", dir, it.EntityType, it.Data, done, it.Keys)
		})
		if err != nil {
			return cli.Exit(fmt.Sprintf("%s: removing %s %s stopped after %d keys: %v (restore the backup with 'shardctl data restore --replace' to start again)", dir, it.EntityType, it.Data, n, err), exitFailed)
		}
		if n != it.Keys {
			// Cannot happen while the directory is held; say so rather than hide it.
			fmt.Fprintf(progress, "warning: %s: %s %s: removed %d keys, the plan counted %d\n", dir, it.EntityType, it.Data, n, it.Keys)
		}
	}
	return nil
}

func removeInternalData(c *cli.Context) error {
	args, err := positionalArgs(c)
	if err != nil {
		return err
	}
	if len(args) == 0 {
		return usagef("remove-internal-data needs TYPE... (the entity types whose data to remove; see 'shardctl remove-internal-data --help')")
	}
	var types []string
	for _, t := range args {
		if err := admin.CheckTypeName(t); err != nil {
			return usagef("TYPE %q: %v", truncate(t, 80), err)
		}
		if strings.Contains(t, keySep) {
			return usagef("TYPE %q: contains a 0 byte", truncate(t, 80))
		}
		if !slices.Contains(types, t) {
			types = append(types, t)
		}
	}
	paths, err := dataDirs(c, 0)
	if err != nil {
		return err
	}
	if err := positiveFlag(c, "probe-timeout"); err != nil {
		return err
	}
	nodes := c.StringSlice("node")
	for _, n := range nodes {
		ma, err := multiaddr.NewMultiaddr(n)
		if err == nil {
			_, err = peer.AddrInfoFromP2pAddr(ma)
		}
		if err != nil {
			return usagef("--node %q: want a member's multiaddr ending in /p2p/<peer id>", truncate(n, 120))
		}
	}
	var psk pnet.PSK
	if f := c.String("cluster-key"); f != "" {
		if psk, err = p2p.LoadClusterKey(f); err != nil {
			return usagef("--cluster-key: %v", err)
		}
	}
	dryRun := c.Bool("dry-run")
	if !dryRun && !c.Bool("yes") {
		if err := needTerminal(c); err != nil {
			return err
		}
	}

	dirs, err := openAllStopped(paths, false)
	if err != nil {
		return err
	}
	defer closeAll(dirs)
	if answers := probe(probeTargets(dirs, nodes), psk, c.Duration("probe-timeout")); len(answers) > 0 {
		lines := make([]string, len(answers))
		for i, a := range answers {
			lines[i] = a.String()
		}
		slices.Sort(lines)
		return cli.Exit(fmt.Sprintf("refused: the cluster is running: %s; stop every member first", strings.Join(lines, "; ")), exitRefused)
	}

	sel := selection{types: types, includeState: c.Bool("include-state")}
	rep := removalReport{DryRun: dryRun, Types: types, IncludeState: sel.includeState, UnknownTypes: []string{}, OtherWriters: []string{}}
	found := map[string]bool{}
	ownPeers := map[string]bool{}
	writers := map[string]int{}
	for _, d := range dirs {
		dr := dirRemoval{DataDir: d.path, Member: d.peer, Store: d.store != nil, Items: []removalItem{}}
		if d.peer != "" {
			ownPeers[d.peer] = true
		}
		if d.store != nil {
			items, ws, err := planRemoval(d.store, sel, nil)
			if err != nil {
				return cli.Exit(fmt.Sprintf("%s: %v", d.path, err), exitFailed)
			}
			dr.Items = items
			for w, n := range ws {
				writers[w] += n
			}
		}
		for _, it := range dr.Items {
			found[it.EntityType] = true
			if it.Removed {
				rep.RemovedKeys += it.Keys
				rep.RemovedBytes += it.Bytes
			}
		}
		rep.DataDirs = append(rep.DataDirs, dr)
	}
	for _, t := range types {
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
	warn := c.App.ErrWriter
	if len(rep.UnknownTypes) > 0 {
		fmt.Fprintf(warn, "warning: no data of %s in any of the directories (types stored there: %s)\n",
			quoteAll(rep.UnknownTypes), orDash(strings.Join(storedTypes(dirs), ", ")))
	}
	for _, d := range rep.DataDirs {
		if !d.Store {
			fmt.Fprintf(warn, "warning: %s holds no store: nothing to remove there\n", d.DataDir)
		}
	}
	if len(rep.OtherWriters) > 0 {
		fmt.Fprintf(warn, "warning: members whose directories are not named here wrote some of this data: %s; remove it from their directories too, or anti-entropy brings it back when they run again\n",
			strings.Join(rep.OtherWriters, ", "))
	}

	if dryRun || rep.RemovedKeys == 0 {
		return printRemoval(c, rep)
	}
	if !c.Bool("yes") {
		ok, err := confirm(c, fmt.Sprintf("Remove %d keys (%d bytes) of %s from %s%s?",
			rep.RemovedKeys, rep.RemovedBytes, strings.Join(types, ", "), plural(len(dirs), "data directory", "data directories"), backupNote(c)))
		if err != nil {
			return err
		}
		if !ok {
			return cli.Exit("not confirmed: nothing changed", exitFailed)
		}
	}
	// Back up every store first: if one backup fails, nothing has been removed anywhere.
	now := time.Now()
	for i, d := range dirs {
		dr := &rep.DataDirs[i]
		if c.Bool("no-backup") || !hasRemovals(dr.Items) {
			continue
		}
		path, err := defaultBackupPath(d, c.String("backup-dir"), now)
		if err != nil {
			return err
		}
		size, err := backupFile(d, path)
		if err != nil {
			return fmt.Errorf("%w (nothing was removed)", err)
		}
		dr.Backup, dr.BackupBytes = path, size
		fmt.Fprintf(warn, "%s: backed up to %s (%d bytes)\n", d.path, path, size)
	}
	for i, d := range dirs {
		dr := rep.DataDirs[i]
		if !hasRemovals(dr.Items) {
			continue
		}
		if err := removeItems(d.store, d.path, dr.Items, warn); err != nil {
			return err
		}
		n, b := removedTotals(dr.Items)
		fmt.Fprintf(warn, "%s: done: removed %d keys (%d bytes)\n", d.path, n, b)
	}
	return printRemoval(c, rep)
}

// needTerminal is bad usage when confirmation would be needed without a terminal to ask
// on: said before anything is opened, as confirm would say it later.
func needTerminal(c *cli.Context) error {
	in := c.App.Reader
	if in == nil {
		in = os.Stdin
	}
	if f, ok := in.(*os.File); ok && !term.IsTerminal(int(f.Fd())) {
		return usagef("%s needs confirmation and stdin is not a terminal: pass --yes (or --dry-run)", c.Command.Name)
	}
	return nil
}

func backupNote(c *cli.Context) string {
	if c.Bool("no-backup") {
		return " without a backup"
	}
	return " (backing up each store first)"
}

func hasRemovals(items []removalItem) bool {
	return slices.ContainsFunc(items, func(it removalItem) bool { return it.Removed })
}

func removedTotals(items []removalItem) (int, int64) {
	n, b := 0, int64(0)
	for _, it := range items {
		if it.Removed {
			n, b = n+it.Keys, b+it.Bytes
		}
	}
	return n, b
}

// storedTypes lists the entity types with data in any of the directories.
func storedTypes(dirs []*stoppedDir) []string {
	seen := map[string]bool{}
	for _, d := range dirs {
		if d.store == nil {
			continue
		}
		if types, _, err := inspectStore(d.store); err == nil {
			for _, t := range types {
				seen[t.EntityType] = true
			}
		}
	}
	out := make([]string, 0, len(seen))
	for t := range seen {
		out = append(out, t)
	}
	slices.Sort(out)
	return out
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}

func quoteAll(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = strconv.Quote(s)
	}
	return strings.Join(q, ", ")
}

func printRemoval(c *cli.Context, rep removalReport) error {
	if c.Bool("json") {
		return printJSON(c.App.Writer, rep)
	}
	w := c.App.Writer
	removed, kept := "removed", "kept"
	if rep.DryRun {
		fmt.Fprintln(w, "dry run: nothing was changed")
		removed, kept = "would remove", "would keep"
	}
	t := newTable(w, "DATA DIR", "TYPE", "DATA", "KEYS", "BYTES", "")
	for _, d := range rep.DataDirs {
		name := d.DataDir
		if d.Member != "" {
			name += " (" + shortID(d.Member) + ")"
		}
		if len(d.Items) == 0 {
			t.row(name, "-", "nothing stored of these types", "0", "0", "")
			continue
		}
		for _, it := range d.Items {
			action := removed
			if !it.Removed {
				action = kept + " (application data; --include-state removes it)"
			}
			t.row(name, it.EntityType, it.Data, strconv.Itoa(it.Keys), strconv.FormatInt(it.Bytes, 10), action)
			name = ""
		}
	}
	t.flush()
	verb := "removed"
	if rep.DryRun {
		verb = "would remove"
	}
	var found []string
	for _, typ := range rep.Types {
		if !slices.Contains(rep.UnknownTypes, typ) {
			found = append(found, typ)
		}
	}
	fmt.Fprintf(w, "total: %s %d keys (%d bytes) of %s in %s\n", verb, rep.RemovedKeys, rep.RemovedBytes, orDash(strings.Join(found, ", ")), plural(len(rep.DataDirs), "data directory", "data directories"))
	for _, d := range rep.DataDirs {
		if d.Backup != "" {
			fmt.Fprintf(w, "backup of %s: %s (restore: shardctl data restore --data-dir %s --in %s --replace)\n", d.DataDir, d.Backup, d.DataDir, d.Backup)
		}
	}
	return nil
}
