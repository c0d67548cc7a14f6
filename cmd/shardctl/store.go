package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/shardmesh/shardmesh/admin/adminpb"
	"github.com/shardmesh/shardmesh/internal/cmdline"
)

// storeStatusJSON is store status --json.
type storeStatusJSON struct {
	Node              string            `json:"node"` // the member that asked the others
	ReplicationFactor uint32            `json:"replication_factor"`
	Metadata          []string          `json:"metadata"` // the members that hold the cluster metadata
	Complete          bool              `json:"complete"` // every member answered
	Types             []storeTypeJSON   `json:"types"`
	Members           []storeMemberJSON `json:"members"`
	Moves             []storeMoveJSON   `json:"moves"`
	MovesTruncated    bool              `json:"moves_truncated"` // more moves than listed
	Failed            []failedJSON      `json:"failed"`
	TimeoutMs         uint64            `json:"timeout_ms"`
}

type storeTypeJSON struct {
	EntityType   string `json:"entity_type"`
	Units        uint32 `json:"units"`   // hosted shards, each a unit of records on a replica set
	Full         uint32 `json:"full"`    // sets of replication-factor members
	Short        uint32 `json:"short"`   // sets of fewer
	Unknown      uint32 `json:"unknown"` // configuration still being read by the host
	Moving       uint32 `json:"moving"`
	Queued       uint32 `json:"queued"`
	Failed       uint32 `json:"failed"`    // last move failed a step; tried again
	ZonesMin     uint32 `json:"zones_min"` // fewest zones a set spans (0: no zones declared)
	Members      uint32 `json:"members"`   // members in at least one set
	PerMemberMin uint32 `json:"per_member_min"`
	PerMemberMax uint32 `json:"per_member_max"`
}

type storeMemberJSON struct {
	Node            string             `json:"node"`
	Zone            string             `json:"zone"`
	MovesRunning    uint32             `json:"moves_running"`
	MovesQueued     uint32             `json:"moves_queued"`
	MaxMoves        uint32             `json:"max_moves"` // sharding.store.max-simultaneous-moves
	MetadataReplica bool               `json:"metadata_replica"`
	MetadataKeys    uint64             `json:"metadata_keys"`
	MetadataRole    string             `json:"metadata_role"`    // leader, follower, joining, none, stopped
	MetadataLeader  string             `json:"metadata_leader"`  // the leader it knows of ("" for none)
	MetadataTerm    uint64             `json:"metadata_term"`    // the group's term it knows
	MetadataApplied uint64             `json:"metadata_applied"` // the log index its replica applied
	MetadataError   string             `json:"metadata_error"`   // why its replica stopped
	Types           []storeHoldingJSON `json:"types"`
	MovesStarted    uint64             `json:"moves_started"`
	MovesFinished   uint64             `json:"moves_finished"`
	MovesFailed     uint64             `json:"moves_failed"`
	MovesAbandoned  uint64             `json:"moves_abandoned"`
	RecordsCopied   uint64             `json:"records_copied"`
}

// storeHoldingJSON is what one member holds of one type as a replica.
type storeHoldingJSON struct {
	EntityType string `json:"entity_type"`
	Sets       uint32 `json:"sets"`  // replica sets it is in, as the units' hosts configure them
	Units      uint32 `json:"units"` // units it holds records of
	Records    uint64 `json:"records"`
	Tombstones uint64 `json:"tombstones"`
}

type storeMoveJSON struct {
	EntityType string   `json:"entity_type"`
	Shard      string   `json:"shard"`
	Host       string   `json:"host"`
	Epoch      string   `json:"epoch"`
	From       []string `json:"from"`
	To         []string `json:"to"`
	Phase      string   `json:"phase"`
	Copied     uint64   `json:"copied"`
	Total      uint64   `json:"total"` // records the host holds: about what the copy moves
	ElapsedMs  uint64   `json:"elapsed_ms"`
	Error      string   `json:"error"`
}

func storeCommand() *cli.Command {
	return &cli.Command{
		Name:        "store",
		Usage:       "the replicated store: replica sets and their moves",
		Subcommands: []*cli.Command{storeStatusCommand()},
	}
}

func storeStatusCommand() *cli.Command {
	return &cli.Command{
		Name:  "status",
		Usage: "replica sets of each type's shards, moves in progress, what each member holds",
		Description: `Asks every member, each within the shard-region-query-timeout (--query-timeout), for its
part of the replicated store, and prints:
  per entity type: the units (a hosted shard's remembered entities and entity states, kept
  on a replica set of sharding.store.replication-factor members), how many sets are full
  or short, how the sets spread (sets per member, the fewest zones a set spans), and the
  moves running, queued and failed;
  per member: its moves against the limit (sharding.store.max-simultaneous-moves), the
  sets it is in and the records it holds per type, its part in the metadata group
  (leader, follower, joining; the log index it applied) and its move counters since it
  started; above them, one line on the metadata group: its leader and term, how far its
  voters applied its log, and what is wrong (no leader, a replica stopped);
  the moves themselves: phase (joining, draining, copying, switching, dropping; queued;
  retrying after a failed step), records copied of about how many, elapsed time, the old
  and the new set.
Members that did not answer are listed and the exit code is 3. --watch D asks again every
D until Ctrl-C.
Example:
   shardctl store status --data-dir /tmp/a
   shardctl store status --data-dir /tmp/a --type counter --json
   shardctl store status --data-dir /tmp/a --watch 2s`,
		Flags: []cli.Flag{
			&cli.StringSliceFlag{Name: "type", Usage: "only entity type `T` (repeatable)"},
			&cli.DurationFlag{Name: "query-timeout", Usage: "bound of each member's answer (default: the member's shard-region-query-timeout)"},
			&cli.DurationFlag{Name: "watch", Usage: "ask again every `D` until Ctrl-C (with --json: one object per line)"},
		},
		Action: func(c *cli.Context) error {
			types, err := typeFlags(c)
			if err != nil {
				return err
			}
			for _, f := range []string{"query-timeout", "watch"} {
				if err := cmdline.PositiveFlag(c, f); err != nil {
					return err
				}
			}
			s, err := connect(c)
			if err != nil {
				return err
			}
			defer s.close()
			ask := func(ctx context.Context) (storeStatusJSON, error) {
				st, err := s.cl.StoreStatus(ctx, types, c.Duration("query-timeout"))
				if err != nil {
					return storeStatusJSON{}, callError(err)
				}
				return storeStatusView(st), nil
			}
			if every := c.Duration("watch"); every > 0 {
				return watchStore(c, every, ask)
			}
			out, err := ask(s.ctx)
			if err != nil {
				return err
			}
			if c.Bool("json") {
				if err := cmdline.PrintJSON(c.App.Writer, out); err != nil {
					return err
				}
			} else {
				printStoreStatus(c.App.Writer, out)
			}
			return partialStore(out)
		},
	}
}

// watchStore asks every interval until Ctrl-C, each round bounded by --timeout, printing
// each answer (a JSON object per line with --json). It ends with exit code 0 on Ctrl-C,
// or with the error of a round that failed.
func watchStore(c *cli.Context, every time.Duration, ask func(context.Context) (storeStatusJSON, error)) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		rctx, cancel := context.WithTimeout(ctx, c.Duration("timeout"))
		out, err := ask(rctx)
		cancel()
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			return err
		}
		if c.Bool("json") {
			if err := json.NewEncoder(c.App.Writer).Encode(out); err != nil {
				return err
			}
		} else {
			fmt.Fprintf(c.App.Writer, "--- %s\n", time.Now().Format(time.TimeOnly))
			printStoreStatus(c.App.Writer, out)
			fmt.Fprintln(c.App.Writer)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

// partialStore is exit code 3 when members did not answer.
func partialStore(out storeStatusJSON) error {
	if out.Complete {
		return nil
	}
	names := make([]string, len(out.Failed))
	for i, f := range out.Failed {
		names[i] = f.Node
	}
	return cli.Exit(fmt.Sprintf("partial result: %d member(s) did not answer within %v: %s", len(out.Failed), ms(out.TimeoutMs), strings.Join(names, ", ")), exitPartial)
}

func storeStatusView(st *adminpb.StoreStatusResponse) storeStatusJSON {
	out := storeStatusJSON{Node: st.Node, ReplicationFactor: st.ReplicationFactor, Metadata: nonNil(st.Metadata), Complete: len(st.Failed) == 0,
		Types: []storeTypeJSON{}, Members: []storeMemberJSON{}, Moves: []storeMoveJSON{}, MovesTruncated: st.MovesTruncated,
		Failed: []failedJSON{}, TimeoutMs: st.TimeoutMs}
	for _, t := range st.Types {
		out.Types = append(out.Types, storeTypeJSON{EntityType: t.EntityType, Units: t.Units, Full: t.Full, Short: t.Short, Unknown: t.Unknown,
			Moving: t.Moving, Queued: t.Queued, Failed: t.Failed, ZonesMin: t.ZonesMin, Members: t.Members, PerMemberMin: t.PerMemberMin, PerMemberMax: t.PerMemberMax})
	}
	for _, m := range st.Members {
		mj := storeMemberJSON{Node: m.Node, Zone: m.Zone, MovesRunning: m.MovesRunning, MovesQueued: m.MovesQueued, MaxMoves: m.MaxMoves,
			MetadataReplica: m.MetadataReplica, MetadataKeys: m.MetadataKeys, MetadataRole: m.MetadataRole, MetadataLeader: m.MetadataLeader,
			MetadataTerm: m.MetadataTerm, MetadataApplied: m.MetadataApplied, MetadataError: m.MetadataError, Types: []storeHoldingJSON{}}
		if ct := m.Counters; ct != nil {
			mj.MovesStarted, mj.MovesFinished, mj.MovesFailed, mj.MovesAbandoned, mj.RecordsCopied = ct.Started, ct.Finished, ct.Failed, ct.Abandoned, ct.Copied
		}
		byType := map[string]*storeHoldingJSON{}
		holding := func(typ string) *storeHoldingJSON {
			if byType[typ] == nil {
				byType[typ] = &storeHoldingJSON{EntityType: typ}
			}
			return byType[typ]
		}
		for _, h := range m.Holdings {
			hj := holding(h.EntityType)
			hj.Units, hj.Records, hj.Tombstones = h.Units, h.Records, h.Tombstones
		}
		for _, s := range m.Sets {
			holding(s.EntityType).Sets = s.Sets
		}
		for _, typ := range slices.Sorted(maps.Keys(byType)) {
			mj.Types = append(mj.Types, *byType[typ])
		}
		out.Members = append(out.Members, mj)
	}
	for _, mv := range st.Moves {
		out.Moves = append(out.Moves, storeMoveJSON{EntityType: mv.EntityType, Shard: mv.Shard, Host: mv.Host, Epoch: epoch(mv.Epoch),
			From: nonNil(mv.From), To: nonNil(mv.To), Phase: mv.Phase, Copied: mv.Copied, Total: mv.Total, ElapsedMs: mv.ElapsedMs, Error: mv.Error})
	}
	for _, f := range st.Failed {
		out.Failed = append(out.Failed, failedJSON{Node: f.Node, Error: f.Error})
	}
	return out
}

func printStoreStatus(w io.Writer, out storeStatusJSON) {
	fmt.Fprintf(w, "replication factor %d; cluster metadata on %s\n", out.ReplicationFactor, listSome(shortIDs(out.Metadata), 7, len(out.Metadata)))
	fmt.Fprintf(w, "%s\n\n", metadataGroupLine(out.Members))
	if len(out.Types) == 0 {
		fmt.Fprintln(w, "no shard hosted yet")
	} else {
		t := cmdline.NewTable(w, "TYPE", "UNITS", "FULL", "SHORT", "MOVING", "QUEUED", "FAILED", "SETS PER MEMBER", "ZONES PER SET")
		for _, ty := range out.Types {
			short := strconv.Itoa(int(ty.Short))
			if ty.Unknown > 0 {
				short += fmt.Sprintf(" (+%d unknown)", ty.Unknown)
			}
			spread := fmt.Sprintf("%d–%d on %d members", ty.PerMemberMin, ty.PerMemberMax, ty.Members)
			if ty.PerMemberMin == ty.PerMemberMax {
				spread = fmt.Sprintf("%d on %d members", ty.PerMemberMin, ty.Members)
			}
			zones := "-"
			if ty.ZonesMin > 0 {
				zones = fmt.Sprintf("≥ %d", ty.ZonesMin)
			}
			t.Row(ty.EntityType, strconv.Itoa(int(ty.Units)), strconv.Itoa(int(ty.Full)), short, strconv.Itoa(int(ty.Moving)),
				strconv.Itoa(int(ty.Queued)), strconv.Itoa(int(ty.Failed)), spread, zones)
		}
		t.Flush()
	}
	fmt.Fprintln(w)
	t := cmdline.NewTable(w, "MEMBER", "ZONE", "MOVES", "TYPE", "IN SETS", "HOLDS UNITS", "RECORDS", "TOMBSTONES", "METADATA")
	for _, m := range out.Members {
		moves := fmt.Sprintf("%d/%d", m.MovesRunning, m.MaxMoves)
		if m.MovesQueued > 0 {
			moves += fmt.Sprintf(" +%d queued", m.MovesQueued)
		}
		meta := metadataPart(m)
		if len(m.Types) == 0 {
			t.Row(cmdline.ShortID(m.Node), cmdline.OrDash(m.Zone), moves, "-", "0", "0", "0", "0", meta)
		}
		for i, h := range m.Types {
			node, zone, mv, md := cmdline.ShortID(m.Node), cmdline.OrDash(m.Zone), moves, meta
			if i > 0 {
				node, zone, mv, md = "", "", "", ""
			}
			t.Row(node, zone, mv, h.EntityType, strconv.Itoa(int(h.Sets)), strconv.Itoa(int(h.Units)), strconv.FormatUint(h.Records, 10),
				strconv.FormatUint(h.Tombstones, 10), md)
		}
	}
	t.Flush()
	fmt.Fprintln(w)
	if len(out.Moves) == 0 {
		fmt.Fprintln(w, "no move in progress")
	} else {
		t := cmdline.NewTable(w, "TYPE", "SHARD", "HOST", "PHASE", "PROGRESS", "ELAPSED", "FROM", "TO")
		for _, mv := range out.Moves {
			t.Row(mv.EntityType, mv.Shard, cmdline.ShortID(mv.Host), movePhase(mv), moveProgress(mv), moveElapsed(mv),
				strings.Join(shortIDs(mv.From), ","), cmdline.OrDash(strings.Join(shortIDs(mv.To), ",")))
		}
		t.Flush()
		if out.MovesTruncated {
			fmt.Fprintln(w, "(more moves than listed: the counts per type are whole; --type narrows the list)")
		}
	}
	fmt.Fprintln(w)
	for _, m := range out.Members {
		fmt.Fprintf(w, "%s moves since start: %d started, %d finished, %d failed, %d abandoned; %d records copied\n",
			cmdline.ShortID(m.Node), m.MovesStarted, m.MovesFinished, m.MovesFailed, m.MovesAbandoned, m.RecordsCopied)
	}
	for _, f := range out.Failed {
		fmt.Fprintf(w, "DID NOT ANSWER: %s (%s)\n", cmdline.ShortID(f.Node), f.Error)
	}
}

// metadataPart is a member's part in the metadata group, for the METADATA column.
func metadataPart(m storeMemberJSON) string {
	switch {
	case m.MetadataRole == "" && m.MetadataReplica: // a member of an earlier release
		return fmt.Sprintf("yes (%d keys)", m.MetadataKeys)
	case m.MetadataRole == "" || m.MetadataRole == "none":
		return "-"
	case m.MetadataRole == "stopped":
		return "STOPPED"
	}
	return fmt.Sprintf("%s (%d keys, applied %d)", m.MetadataRole, m.MetadataKeys, m.MetadataApplied)
}

// metadataGroupLine sums up the metadata group from the members' answers: its leader and
// term, how far its voters applied its log, and what is wrong (no leader known, members
// that name different leaders, replicas stopped).
func metadataGroupLine(ms []storeMemberJSON) string {
	var leaders, voters, stopped []string
	var term, lo, hi uint64
	named := map[string]bool{}
	for _, m := range ms {
		term = max(term, m.MetadataTerm)
		if m.MetadataLeader != "" {
			named[m.MetadataLeader] = true
		}
		switch m.MetadataRole {
		case "leader":
			leaders = append(leaders, cmdline.ShortID(m.Node))
			fallthrough
		case "follower":
			if len(voters) == 0 || m.MetadataApplied < lo {
				lo = m.MetadataApplied
			}
			hi = max(hi, m.MetadataApplied)
			voters = append(voters, m.Node)
		case "stopped":
			stopped = append(stopped, fmt.Sprintf("%s (%s)", cmdline.ShortID(m.Node), cmdline.Truncate(m.MetadataError, 80)))
		}
	}
	if len(voters) == 0 && len(stopped) == 0 {
		return "metadata group: no member reported its part (members of an earlier release)"
	}
	var b strings.Builder
	switch {
	case len(leaders) == 1:
		fmt.Fprintf(&b, "metadata group: leader %s, term %d", leaders[0], term)
	case len(leaders) == 0:
		fmt.Fprintf(&b, "metadata group: NO LEADER known (term %d): metadata calls wait for an election, or a majority of the voters", term)
	default:
		fmt.Fprintf(&b, "metadata group: %d members say they lead (%s; term %d): an election is under way", len(leaders), strings.Join(leaders, ", "), term)
	}
	fmt.Fprintf(&b, "; %d voters answered, applied %d", len(voters), hi)
	if lo < hi {
		fmt.Fprintf(&b, " (the furthest behind: %d)", lo)
	}
	if len(named) > 1 {
		fmt.Fprintf(&b, "; members name %d different leaders", len(named))
	}
	if len(stopped) > 0 {
		fmt.Fprintf(&b, "; replica STOPPED on %s", strings.Join(stopped, ", "))
	}
	return b.String()
}

func movePhase(mv storeMoveJSON) string {
	if mv.Error != "" {
		return mv.Phase + " (" + cmdline.Truncate(mv.Error, 60) + ")"
	}
	return mv.Phase
}

// moveProgress is a move's records copied of about how many: only while it copies or later.
func moveProgress(mv storeMoveJSON) string {
	switch {
	case mv.Copied == 0 && mv.Phase != "copying":
		return "-"
	case mv.Total == 0:
		return strconv.FormatUint(mv.Copied, 10)
	}
	return fmt.Sprintf("%d/~%d (%d%%)", mv.Copied, mv.Total, mv.Copied*100/mv.Total)
}

func moveElapsed(mv storeMoveJSON) string {
	if mv.ElapsedMs == 0 {
		return "-"
	}
	return ms(mv.ElapsedMs).String()
}
