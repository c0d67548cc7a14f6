package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/pnet"
	"github.com/multiformats/go-multiaddr"
	"github.com/urfave/cli/v2"

	"github.com/shardmesh/shardmesh/admin"
	"github.com/shardmesh/shardmesh/admin/adminpb"
	"github.com/shardmesh/shardmesh/datadir"
	"github.com/shardmesh/shardmesh/internal/cmdline"
	"github.com/shardmesh/shardmesh/p2p"
)

// defaultTimeout is --timeout's default for commands that make one call.
const defaultTimeout = 10 * time.Second

// globalFlags are the flags every command that talks to a member shares.
func globalFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "node", Usage: "the member to talk to: its `MULTIADDR` (ending in /p2p/<peer id>), or its peer id (or the end of it, as tables show it) reached through $SHARDMESH_NODE or --data-dir", EnvVars: []string{"SHARDMESH_NODE"}},
		&cli.StringFlag{Name: "data-dir", Usage: "data `DIR` of a member running on this machine (its addrs file names it)", EnvVars: []string{"SHARDMESH_DATA_DIR"}},
		&cli.StringFlag{Name: "cluster-key", Usage: "the cluster's key `FILE`, if the cluster has one", EnvVars: []string{"SHARDMESH_CLUSTER_KEY"}},
		&cli.StringFlag{Name: "identity", Usage: "admin identity key `FILE` (shardctl keygen admin); calls that change the cluster are signed with it", EnvVars: []string{"SHARDMESH_IDENTITY"}},
		&cli.StringFlag{Name: "credential", Usage: "the identity's admin credential `FILE` (shardctl credential admin); default IDENTITY.credential when it exists", EnvVars: []string{"SHARDMESH_CREDENTIAL"}},
		timeoutFlag(defaultTimeout, "give up after this long"),
		&cli.StringFlag{Name: "context", Usage: "use saved context `NAME` for this call instead of the current one (shardctl context)", EnvVars: []string{"SHARDMESH_CONTEXT"}},
		&cli.BoolFlag{Name: "json", Usage: "print JSON instead of tables"},
	}
}

func timeoutFlag(d time.Duration, usage string) cli.Flag {
	return &cli.DurationFlag{Name: "timeout", Usage: usage, Value: d, EnvVars: []string{"SHARDMESH_TIMEOUT"}}
}

// session is a connection to the member named by the global flags. Its context carries
// --timeout.
type session struct {
	cl     *admin.Client
	ctx    context.Context
	cancel context.CancelFunc
	psk    pnet.PSK
	key    crypto.PrivKey
	cred   []byte // the identity's admin credential, if any
}

func (s *session) close() {
	s.cl.Close()
	s.cancel()
}

// connect connects to the member the global flags name; the session's context is bounded
// by --timeout.
func connect(c *cli.Context) (*session, error) {
	if err := cmdline.PositiveFlag(c, "timeout"); err != nil {
		return nil, err
	}
	s := &session{}
	if err := s.loadKeys(c); err != nil {
		return nil, err
	}
	s.ctx, s.cancel = context.WithTimeout(context.Background(), c.Duration("timeout"))
	addr, name, err := entryPoint(c)
	if err != nil {
		s.cancel()
		return nil, err
	}
	if s.cl, err = s.dial(addr); err != nil {
		s.cancel()
		return nil, err
	}
	if name == "" {
		return s, nil
	}
	// --node named a member by its id: find its address through the entry point.
	m, err := s.member(name)
	if err != nil {
		s.close()
		return nil, err
	}
	if m.Node == s.cl.Node().String() {
		return s, nil
	}
	target, err := s.dialMember(m)
	s.cl.Close()
	if err != nil {
		s.cancel()
		return nil, err
	}
	s.cl = target
	return s, nil
}

// entryPoint returns the multiaddr to dial first and, when --node names a member by its
// id instead of an address, that name.
func entryPoint(c *cli.Context) (addr, name string, err error) {
	nodeFlag := c.String("node")
	if strings.HasPrefix(nodeFlag, "/") {
		return nodeFlag, "", nil
	}
	if nodeFlag != "" {
		name = nodeFlag
		// The entry point: $SHARDMESH_NODE when --node came from the command line.
		if env := os.Getenv("SHARDMESH_NODE"); strings.HasPrefix(env, "/") && c.IsSet("node") {
			return env, name, nil
		}
	}
	dir := c.String("data-dir")
	if dir == "" {
		if name != "" {
			return "", "", cmdline.Usagef("--node %q is not a multiaddr; to name a member by its peer id, also give --data-dir DIR or $SHARDMESH_NODE of a member to ask", name)
		}
		return "", "", cmdline.Usagef("which member? set --node MULTIADDR, $SHARDMESH_NODE or --data-dir DIR, or save them in a context (shardctl context set --help)")
	}
	addrs, err := datadir.ReadAddrs(dir)
	if err != nil {
		return "", "", cli.Exit("--data-dir: "+err.Error(), exitUsage)
	}
	if len(addrs) == 0 {
		return "", "", cli.Exit("the addrs file in "+dir+" is empty", exitFailed)
	}
	return addrs[0], name, nil
}

// dial connects to the member at addr with the session's key and identity.
func (s *session) dial(addr string) (*admin.Client, error) {
	cl, err := admin.Dial(s.ctx, admin.ClientConfig{Node: addr, Identity: s.key, Credential: s.cred, ClusterKey: s.psk})
	if err != nil {
		return nil, &dialError{msg: dialProblem(addr, err), err: err}
	}
	return cl, nil
}

// dialError is a failed connection: what dialProblem says, exit code 1, and the cause.
type dialError struct {
	msg string
	err error
}

func (e *dialError) Error() string { return e.msg }
func (e *dialError) Unwrap() error { return e.err }
func (e *dialError) ExitCode() int { return exitFailed }

// configProblem reports whether a failed connection is one that trying again cannot fix:
// the member refused the handshake at once (another cluster key, its allow-list), the
// address names another member, our allow-list refuses it, or the command line is wrong.
func configProblem(err error) bool {
	return errors.Is(err, p2p.ErrPeerIDMismatch) || errors.Is(err, p2p.ErrNotAllowed) ||
		errors.Is(err, p2p.ErrHandshake) && !errors.Is(err, context.DeadlineExceeded) ||
		cmdline.ExitCode(err, exitFailed) == exitUsage
}

// dialProblem says, first, why a connection to addr failed: the wrong member, a handshake
// that did not complete in time (which is not a wrong key: another key is refused at once),
// a refusal, no answer; then the details.
func dialProblem(addr string, err error) string {
	switch {
	case errors.Is(err, p2p.ErrPeerIDMismatch):
		return fmt.Sprintf("peer id mismatch: the member at %s is not the one its /p2p/ id names; check --node, or the addrs file of --data-dir (%v)", addr, err)
	case errors.Is(err, p2p.ErrHandshakeTimeout) || errors.Is(err, context.DeadlineExceeded) && (errors.Is(err, p2p.ErrHandshake) || acceptsTCP(addr)):
		return fmt.Sprintf("cannot reach %s within --timeout: it accepted the connection but did not complete the handshake: "+
			"the member is hung or stopped (kill -STOP, a long pause), or overloaded or flooded with connections (its log says so); "+
			"a member under another --cluster-key refuses at once, so this is not a wrong key unless only one side has one", addr)
	case errors.Is(err, context.DeadlineExceeded):
		return fmt.Sprintf("cannot reach %s within --timeout: nothing answered there (a wrong address, a firewall, a stopped host?)", addr)
	case errors.Is(err, p2p.ErrHandshake):
		return fmt.Sprintf("the member at %s refused the connection: check --cluster-key: it holds another cluster key (or only one side has one), "+
			"or its allow-list does not include this client (%v)", addr, err)
	}
	return err.Error()
}

// acceptsTCP reports whether something accepts TCP connections at addr's host and port.
func acceptsTCP(addr string) bool {
	ma, err := multiaddr.NewMultiaddr(addr)
	return err == nil && p2p.AcceptsTCP(ma)
}

// dialMember connects to another member by the addresses it announced.
func (s *session) dialMember(m *adminpb.MemberInfo) (*admin.Client, error) {
	var last error
	for _, a := range m.Addrs {
		addr := a
		if !strings.Contains(addr, "/p2p/") {
			addr += "/p2p/" + m.Node
		}
		cl, err := s.dial(addr)
		if err == nil {
			return cl, nil
		}
		last = err
	}
	if last == nil {
		return nil, cli.Exit(fmt.Sprintf("member %s announced no address", m.Node), exitFailed)
	}
	return nil, last
}

// connectToMember connects for a command whose one argument is a member (NODE) and finds
// that member (a Removed one too with removedOK, see findMember).
func connectToMember(c *cli.Context, removedOK bool) (*session, *adminpb.MemberInfo, error) {
	args, err := cmdline.Positional(c, "NODE", 1)
	if err != nil {
		return nil, nil, err
	}
	s, err := connect(c)
	if err != nil {
		return nil, nil, err
	}
	view, err := s.cl.Members(s.ctx)
	if err != nil {
		s.close()
		return nil, nil, callError(err)
	}
	m, err := findMember(view, args[0], removedOK)
	if err != nil {
		s.close()
		return nil, nil, err
	}
	return s, m, nil
}

// member finds a member of the cluster by name, as the connected member sees it.
func (s *session) member(name string) (*adminpb.MemberInfo, error) {
	view, err := s.cl.Members(s.ctx)
	if err != nil {
		return nil, callError(err)
	}
	return findMember(view, name, false)
}

// findMember resolves a member's name: its peer id, or the end of it as tables print it
// ("…Xy3kLm9q" or "Xy3kLm9q", at least 4 characters). Members that are Removed are found
// only when no other member has that name, and then only with removedOK (down reports
// them as Removed already): otherwise it is an error that says they were removed, as
// 'shardctl members' still lists them. An unknown or ambiguous name is bad usage.
func findMember(view *adminpb.MembersResponse, name string, removedOK bool) (*adminpb.MemberInfo, error) {
	live, removed := matchMembers(view, name, false), matchMembers(view, name, true)
	switch {
	case len(live) == 1:
		return live[0], nil
	case len(live) > 1:
		return nil, cmdline.Usagef("member name %q is ambiguous: it ends %d members' ids; give more of it", name, len(live))
	case len(removed) == 1 && removedOK:
		return removed[0], nil
	case len(removed) == 1:
		return nil, cmdline.Usagef("member %s was Removed from the cluster: it no longer runs shards or answers for the cluster (a restarted daemon joins as a new member)", removed[0].Node)
	}
	var ids []string
	for _, m := range view.GetMembers() {
		if m.Status != "Removed" {
			ids = append(ids, cmdline.ShortID(m.Node))
		}
	}
	slices.Sort(ids)
	return nil, cmdline.Usagef("unknown member %q: %s knows %s", cmdline.Truncate(name, 80), cmdline.ShortID(view.Self), strings.Join(ids, ", "))
}

// matchMembers are the members, Removed or not as removed says, whose id is name or ends
// with it (at least 4 characters of it); an exact match is the only one.
func matchMembers(view *adminpb.MembersResponse, name string, removed bool) []*adminpb.MemberInfo {
	suffix := strings.TrimPrefix(name, "…")
	var found []*adminpb.MemberInfo
	for _, m := range view.GetMembers() {
		if (m.Status == "Removed") != removed {
			continue
		}
		if m.Node == name {
			return []*adminpb.MemberInfo{m}
		}
		if len(suffix) >= 4 && strings.HasSuffix(m.Node, suffix) {
			found = append(found, m)
		}
	}
	return found
}

// callError turns a failed admin call into the documented exit code (nil stays nil).
func callError(err error) error {
	if err == nil {
		return nil
	}
	var ce *admin.CallError
	if errors.As(err, &ce) {
		switch ce.Code {
		case adminpb.Code_BAD_REQUEST:
			return cli.Exit(ce.Message, exitUsage)
		case adminpb.Code_PARTIAL:
			return cli.Exit(ce.Message, exitPartial)
		case adminpb.Code_REFUSED:
			return cli.Exit(ce.Message, exitRefused)
		}
		return cli.Exit(ce.Message, exitFailed)
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return cli.Exit("no answer within --timeout", exitFailed)
	}
	return cli.Exit(err.Error(), exitFailed)
}
