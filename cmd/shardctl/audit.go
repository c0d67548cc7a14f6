package main

import (
	"fmt"
	"io"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/shardmesh/shardmesh/admin/adminpb"
	"github.com/shardmesh/shardmesh/internal/cmdline"
)

// auditJSON is one record of audit --json.
type auditJSON struct {
	At          string `json:"at"`
	Member      string `json:"member"` // the member that took the call
	Caller      string `json:"caller"` // the identity that signed it
	Call        string `json:"call"`
	Args        string `json:"args"` // JSON
	Outcome     string `json:"outcome"`
	Verified    bool   `json:"verified"` // the request verifies against the asked member's admin set
	VerifyError string `json:"verify_error,omitempty"`
}

func auditCommand() *cli.Command {
	return &cli.Command{
		Name:  "audit",
		Usage: "the admin calls the members took, cluster-wide (the audit log)",
		Description: `Lists the admin calls of the whole cluster from the replicated store: when, the member
that took the call, the identity that signed it, the call, its arguments and the outcome —
calls carried out, and signed calls a member refused. The member asked verifies every
request again against its own admin set: VERIFIED no marks a call that member would not
have followed (a member with another admin set took it; the members that follow only
their admins ignored it, and logged so). Oldest first; --limit keeps the newest. Records
are kept 90 days, at most 10,000. The log is cluster metadata, read from a majority of the
members that hold it; when no majority answers, the copies of those that do (the member
asked included) are printed, possibly stale, a line names the members missing, and the
exit code is 3 (a partial result).
Example:
   shardctl audit --data-dir /tmp/a --since 24h
   shardctl audit --data-dir /tmp/a --json`,
		Flags: []cli.Flag{
			&cli.DurationFlag{Name: "since", Usage: "only records of the last `D` (e.g. 24h)"},
			&cli.IntFlag{Name: "limit", Value: 1000, Usage: "at most `N` records (the newest)"},
		},
		Action: func(c *cli.Context) error {
			if _, err := cmdline.Positional(c, "", 0); err != nil {
				return err
			}
			since, err := sinceAndLimit(c)
			if err != nil {
				return err
			}
			s, err := connect(c)
			if err != nil {
				return err
			}
			defer s.close()
			a, err := s.cl.Audit(s.ctx, since, c.Int("limit"))
			if err != nil {
				return callError(err)
			}
			out := make([]auditJSON, 0, len(a.Records))
			for _, r := range a.Records {
				out = append(out, auditView(r))
			}
			if c.Bool("json") {
				if err := cmdline.PrintJSON(c.App.Writer, out); err != nil {
					return err
				}
			} else {
				printAudit(c.App.Writer, out, a)
			}
			return partialMetaRead(a.Missing)
		},
	}
}

func auditView(r *adminpb.AuditRecord) auditJSON {
	return auditJSON{At: time.UnixMilli(r.AtUnixMs).UTC().Format("2006-01-02T15:04:05.000Z07:00"), Member: r.Member, Caller: r.Caller,
		Call: r.Call, Args: r.Args, Outcome: r.Outcome, Verified: r.Verified, VerifyError: r.VerifyError}
}

func printAudit(w io.Writer, recs []auditJSON, a *adminpb.AuditResponse) {
	if len(recs) == 0 {
		fmt.Fprintln(w, "no admin calls recorded")
		return
	}
	if a.Truncated {
		fmt.Fprintln(w, "(older records left out: raise --limit)")
	}
	t := cmdline.NewTable(w, "AT", "MEMBER", "CALLER", "CALL", "ARGS", "OUTCOME", "VERIFIED")
	unverified := 0
	for _, r := range recs {
		verified := "yes"
		if !r.Verified {
			verified, unverified = "NO", unverified+1
		}
		t.Row(r.At, cmdline.ShortID(r.Member), cmdline.OrDash(cmdline.ShortID(r.Caller)), cmdline.OrDash(r.Call), cmdline.Truncate(r.Args, 60),
			cmdline.Truncate(r.Outcome, 60), verified)
	}
	t.Flush()
	if unverified > 0 {
		fmt.Fprintf(w, "%s not verified by %s: signed by identities that are not its admins (audit --json says why)\n",
			cmdline.Plural(unverified, "1 call", fmt.Sprintf("%d calls", unverified)), cmdline.ShortID(a.Node))
	}
}
