package main

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/urfave/cli/v2"

	"github.com/shardmesh/shardmesh/datadir"
	"github.com/shardmesh/shardmesh/internal/cmdline"
	"github.com/shardmesh/shardmesh/p2p"
	"github.com/shardmesh/shardmesh/trust"
)

// credentialJSON describes a credential (credential member|admin|show --json).
type credentialJSON struct {
	File      string `json:"file"`
	Role      string `json:"role"`
	Subject   string `json:"subject"`
	Authority string `json:"authority"`
	NotBefore string `json:"not_before"`
	NotAfter  string `json:"not_after"`
}

func keygenAuthorityCommand() *cli.Command {
	return &cli.Command{
		Name:  "authority",
		Usage: "make a cluster authority, which issues member and admin credentials",
		Description: `Writes a new cluster authority (an Ed25519 key, mode 0600) and prints its id. Give the id
to every member with --cluster-authority: from then on a member joins only with a member
credential the authority issued (shardctl credential member), and an identity with an admin
credential it issued (shardctl credential admin) is an admin. Keep the key offline: whoever
holds it can admit members and admins. docs/security.md has the whole setup.

Example:
   shardctl keygen authority --out authority.key
   shardctl credential member --authority authority.key --data-dir /tmp/a
   sharddaemon --data-dir /tmp/a --cluster-key cluster.key --cluster-authority 12D3KooW...`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "out", Usage: "write the authority's key to `FILE`", Value: "authority.key"},
			&cli.BoolFlag{Name: "json", Usage: "print JSON"},
		},
		Action: func(c *cli.Context) error {
			id, err := writeKey(c)
			if err != nil {
				return err
			}
			if c.Bool("json") {
				return cmdline.PrintJSON(c.App.Writer, map[string]string{"file": c.String("out"), "authority": id.String()})
			}
			fmt.Fprintf(c.App.Writer, "wrote cluster authority %s (keep it offline: whoever holds it admits members and admins)\nauthority id: %s\n"+
				"give it to every member with --cluster-authority %s\n", c.String("out"), id, id)
			return nil
		},
	}
}

func credentialCommand() *cli.Command {
	common := func(validFor time.Duration) []cli.Flag {
		return []cli.Flag{
			&cli.StringFlag{Name: "authority", Usage: "the cluster authority's key `FILE` (shardctl keygen authority)", Required: true},
			&cli.DurationFlag{Name: "valid-for", Value: validFor, Usage: "how long the credential is valid"},
			&cli.BoolFlag{Name: "replace", Usage: "replace an existing credential file (rotation)"},
			&cli.BoolFlag{Name: "json", Usage: "print JSON"},
		}
	}
	return &cli.Command{
		Name:  "credential",
		Usage: "issue member and admin credentials with the cluster authority, or show one",
		Description: `A member of a cluster with an authority (--cluster-authority) joins only with a member
credential that authority issued for its identity; an identity with an admin credential it
issued is an admin of every member that trusts the authority. Credentials are checked when
a member joins and when an admin's request is carried out; they are not secret (each names
an identity and proves nothing without its key), and expire (--valid-for). docs/security.md
says how to rotate them without downtime.`,
		Subcommands: []*cli.Command{{
			Name:  "member",
			Usage: "issue a member credential for a member's identity",
			Description: `With --data-dir, for the identity in that data directory (made there if the member has not
started yet), written to DIR/member.credential, where sharddaemon reads it; with --peer-id,
for that identity, written to --out.

Example:
   shardctl credential member --authority authority.key --data-dir /var/lib/shardmesh
   shardctl credential member --authority authority.key --peer-id 12D3KooW... --out m7.credential`,
			Flags: append(common(365*24*time.Hour),
				&cli.StringFlag{Name: "data-dir", Usage: "the member's data `DIR`"},
				&cli.StringFlag{Name: "peer-id", Usage: "the member's peer `ID` (when its data directory is elsewhere)"},
				&cli.StringFlag{Name: "out", Usage: "write the credential to `FILE` (default DIR/member.credential)"}),
			Action: func(c *cli.Context) error {
				subject, out, err := memberSubject(c)
				if err != nil {
					return err
				}
				return issue(c, trust.RoleMember, subject, out)
			},
		}, {
			Name:  "admin",
			Usage: "issue an admin credential for an admin identity",
			Description: `For the identity in --identity (shardctl keygen admin makes one), written next to it as
IDENTITY.credential, where shardctl finds it (or --out); or for --peer-id.

Example:
   shardctl keygen admin --out admin.key
   shardctl credential admin --authority authority.key --identity admin.key
   shardctl drain --data-dir /tmp/a --identity admin.key 12D3KooW...`,
			Flags: append(common(90*24*time.Hour),
				&cli.StringFlag{Name: "identity", Usage: "the admin identity key `FILE`"},
				&cli.StringFlag{Name: "peer-id", Usage: "the admin identity's peer `ID`"},
				&cli.StringFlag{Name: "out", Usage: "write the credential to `FILE` (default IDENTITY.credential)"}),
			Action: func(c *cli.Context) error {
				subject, out, err := adminSubject(c)
				if err != nil {
					return err
				}
				return issue(c, trust.RoleAdmin, subject, out)
			},
		}, {
			Name:      "show",
			Usage:     "print what a credential file says",
			ArgsUsage: "FILE",
			Description: `Prints the role, the identity, the authority and the validity of a credential, as its
signed bytes say (the PEM headers are for people only).

Example:
   shardctl credential show /var/lib/shardmesh/member.credential --json`,
			Flags: []cli.Flag{&cli.BoolFlag{Name: "json", Usage: "print JSON"}},
			Action: func(c *cli.Context) error {
				args, err := cmdline.Positional(c, "FILE", 1)
				if err != nil {
					return err
				}
				cred, err := trust.ReadCredentialFile(args[0])
				if err != nil {
					return cli.Exit(err.Error(), exitFailed)
				}
				return printCredential(c, args[0], cred)
			},
		}},
	}
}

// memberSubject returns the identity a member credential is for and the file to write.
func memberSubject(c *cli.Context) (peer.ID, string, error) {
	if _, err := cmdline.Positional(c, "", 0); err != nil {
		return "", "", err
	}
	dir, id := c.String("data-dir"), c.String("peer-id")
	switch {
	case dir != "" && id != "":
		return "", "", cmdline.Usagef("give --data-dir or --peer-id, not both")
	case dir != "":
		key, err := p2p.LoadOrCreateIdentity(filepath.Join(dir, datadir.IdentityFile))
		if err != nil {
			return "", "", cli.Exit("--data-dir: "+err.Error(), exitFailed)
		}
		subject, err := peer.IDFromPrivateKey(key)
		if err != nil {
			return "", "", cli.Exit(err.Error(), exitFailed)
		}
		out := c.String("out")
		if out == "" {
			out = filepath.Join(dir, datadir.CredentialFile)
		}
		return subject, out, nil
	case id != "":
		return parseSubject(id, c.String("out"))
	}
	return "", "", cmdline.Usagef("which member? give --data-dir DIR (its data directory) or --peer-id ID with --out FILE")
}

// adminSubject returns the identity an admin credential is for and the file to write.
func adminSubject(c *cli.Context) (peer.ID, string, error) {
	if _, err := cmdline.Positional(c, "", 0); err != nil {
		return "", "", err
	}
	file, id := c.String("identity"), c.String("peer-id")
	switch {
	case file != "" && id != "":
		return "", "", cmdline.Usagef("give --identity or --peer-id, not both")
	case file != "":
		key, err := p2p.LoadIdentity(file)
		if err != nil {
			return "", "", cli.Exit("--identity: "+err.Error(), exitUsage)
		}
		subject, err := peer.IDFromPrivateKey(key)
		if err != nil {
			return "", "", cli.Exit(err.Error(), exitFailed)
		}
		out := c.String("out")
		if out == "" {
			out = file + ".credential"
		}
		return subject, out, nil
	case id != "":
		return parseSubject(id, c.String("out"))
	}
	return "", "", cmdline.Usagef("which identity? give --identity FILE (shardctl keygen admin) or --peer-id ID with --out FILE")
}

func parseSubject(id, out string) (peer.ID, string, error) {
	subject, err := peer.Decode(id)
	if err != nil {
		return "", "", cmdline.Usagef("--peer-id %q is not a peer id (12D3KooW…)", cmdline.Truncate(id, 80))
	}
	if out == "" {
		return "", "", cmdline.Usagef("--peer-id needs --out FILE")
	}
	return subject, out, nil
}

// issue signs a credential of role for subject with --authority and writes it to out.
func issue(c *cli.Context, role trust.Role, subject peer.ID, out string) error {
	key, err := p2p.LoadIdentity(c.String("authority"))
	if err != nil {
		return cli.Exit("--authority: "+err.Error(), exitUsage)
	}
	if err := cmdline.PositiveFlag(c, "valid-for"); err != nil {
		return err
	}
	raw, err := trust.IssueCredential(key, role, subject, time.Now(), c.Duration("valid-for"))
	if err != nil {
		return cli.Exit(err.Error(), exitFailed)
	}
	if err := trust.WriteCredentialFile(out, raw, c.Bool("replace")); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return cli.Exit(fmt.Sprintf("%v (pass --replace to rotate it)", err), exitFailed)
		}
		return cli.Exit(err.Error(), exitFailed)
	}
	cred, err := trust.ParseCredential(raw)
	if err != nil {
		return cli.Exit(err.Error(), exitFailed)
	}
	return printCredential(c, out, cred)
}

func printCredential(c *cli.Context, file string, cred *trust.Credential) error {
	v := credentialJSON{File: file, Role: trust.RoleName(cred.Role), Subject: cred.Subject.String(), Authority: cred.Authority.String(),
		NotBefore: cred.NotBefore.UTC().Format(time.RFC3339), NotAfter: cred.NotAfter.UTC().Format(time.RFC3339)}
	if c.Bool("json") {
		return cmdline.PrintJSON(c.App.Writer, v)
	}
	fmt.Fprintf(c.App.Writer, "%s: %s credential for %s\nissued by authority %s\nvalid %s to %s\n", v.File, v.Role, v.Subject, v.Authority, v.NotBefore, v.NotAfter)
	return nil
}
