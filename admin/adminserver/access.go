package adminserver

import (
	"fmt"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/shardmesh/shardmesh/admin"
	"github.com/shardmesh/shardmesh/admin/adminpb"
	"github.com/shardmesh/shardmesh/trust"
)

// caller is who made a call: the peer at the other end of the stream, and, for a signed
// request, the admin who signed it (as this member's policy verified it).
type caller struct {
	peer  peer.ID
	admin *trust.Admin // nil: not signed by an admin of this member
}

// name is the identity the logs and the audit name: the signer of a signed request, else
// the peer.
func (c caller) name() string {
	if c.admin != nil {
		return c.admin.Signer.String()
	}
	return c.peer.String()
}

// openSigned verifies a signed request against this member's admin set and returns the
// admin who signed it and the request inside. A request that does not verify is refused
// here, saying what it asked and why it is refused, with the signer when there is one.
func (s *Server) openSigned(raw []byte) (*trust.Admin, *adminpb.Request, *adminpb.Response) {
	sg, err := trust.OpenSigned(raw)
	if err != nil {
		return nil, nil, refuse(adminpb.Code_BAD_REQUEST, "%v", err)
	}
	inner, err := admin.DecodeSignedBody(sg.Body)
	if err != nil {
		return nil, nil, refuse(adminpb.Code_BAD_REQUEST, "%v", err)
	}
	name, _ := admin.CallInfo(inner)
	if sg.Signer == "" {
		return nil, nil, refuse(adminpb.Code_REFUSED, "refused: %s changes the cluster and needs a request signed by an admin identity (shardctl --identity FILE)", name)
	}
	a, err := s.policy.Authorize(time.Now(), sg)
	if err != nil {
		return nil, nil, refuse(adminpb.Code_REFUSED, "refused: %s changes the cluster and needs an admin identity: %v", name, err)
	}
	return a, inner, nil
}

// authorize returns the refusal of call req from c, or nil when it may proceed. A call
// that changes the cluster needs a request signed by an admin of this member, issued for
// this member, fresh and not seen before; a call that only reads is answered to admins and
// members, and to anyone with admin-read-only-open.
func (s *Server) authorize(c caller, req *adminpb.Request) *adminpb.Response {
	name, acc := admin.CallInfo(req)
	var reason string
	switch {
	case acc == admin.AccessAdmin && c.admin == nil:
		if !s.policy.HasAdmins() {
			reason = name + " changes the cluster and needs an admin identity, and this member allows none: start it with --admin-allow PEER_ID (shardctl keygen admin makes an identity and prints its peer id) or --cluster-authority ID"
		} else {
			reason = name + " changes the cluster and needs a request signed by an admin identity: caller " + c.peer.String() +
				" sent it unsigned (pass an admin identity with shardctl --identity FILE; a shardctl older than this member does not sign)"
		}
	case acc == admin.AccessAdmin:
		if err := s.fresh(req); err != nil {
			reason = name + ": " + err.Error()
		}
	case s.cfg.ReadOnlyOpen || s.policy.AllowsAdmin(c.peer) || c.peer == s.self || s.isMember(c.peer):
	default:
		reason = name + " needs an admin identity here (admin-read-only-open is off): caller " + c.peer.String() + " is neither in --admin-allow nor a member"
	}
	if reason == "" {
		return nil
	}
	s.log.Warn("admin call refused", "call", name, "caller", c.name(), "peer", c.peer.String(), "reason", reason)
	return refuse(adminpb.Code_REFUSED, "refused: %s", reason)
}

// fresh checks that a signed request was issued for this member, recently, and is not a
// replay of one carried out before.
func (s *Server) fresh(req *adminpb.Request) error {
	if req.Target != s.backend.Self() {
		return fmt.Errorf("the request was signed for member %q, not this one (%s): a member passing on a request it was sent may not carry it out", req.Target, s.backend.Self())
	}
	s.replayMu.Lock()
	defer s.replayMu.Unlock()
	return s.replay.Check(req.Nonce, time.UnixMilli(req.IssuedAtUnixMs), time.Now())
}

// isMember reports whether p is a current member of the cluster (members query each
// other's regions for stats and locate).
func (s *Server) isMember(p peer.ID) bool {
	id := p.String()
	for _, m := range s.backend.Members().GetMembers() {
		if m.Node == id && m.Status != "Down" && m.Status != "Removed" {
			return true
		}
	}
	return false
}
