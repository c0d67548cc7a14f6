package trust

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
)

// Policy is what one member trusts: the authorities whose credentials admit members and
// admins, and the admin identities it allows by peer id. The zero Policy is open: any key
// holder may join, and there is no admin.
type Policy struct {
	authorities map[peer.ID]bool
	admins      map[peer.ID]bool
	skew        time.Duration
}

// NewPolicy returns the policy of a member that trusts authorities (cluster-authority) and
// the admin identities admins (admin-allow).
func NewPolicy(authorities, admins []peer.ID) *Policy {
	p := &Policy{authorities: map[peer.ID]bool{}, admins: map[peer.ID]bool{}, skew: DefaultSkew}
	for _, a := range authorities {
		p.authorities[a] = true
	}
	for _, a := range admins {
		p.admins[a] = true
	}
	return p
}

// Admission reports whether a member needs a credential to join (the policy has an
// authority); without, admission is open: any key holder can join as a member.
func (p *Policy) Admission() bool { return p != nil && len(p.authorities) > 0 }

// HasAdmins reports whether any identity can be an admin here: admin-allow lists one, or an
// authority can issue admin credentials. A member without admins follows unsigned
// directives (nobody could sign one it would accept) and refuses every admin call.
func (p *Policy) HasAdmins() bool { return p != nil && (len(p.admins) > 0 || len(p.authorities) > 0) }

// AllowsAdmin reports whether id is in admin-allow (an admin by its peer id alone).
func (p *Policy) AllowsAdmin(id peer.ID) bool { return p != nil && p.admins[id] }

// Authorities returns the trusted authorities, sorted.
func (p *Policy) Authorities() []peer.ID { return sortedIDs(p.authorities) }

// Admins returns the admin identities allowed by peer id, sorted.
func (p *Policy) Admins() []peer.ID { return sortedIDs(p.admins) }

func sortedIDs(m map[peer.ID]bool) []peer.ID {
	out := make([]peer.ID, 0, len(m))
	for id := range m {
		out = append(out, id)
	}
	slices.Sort(out)
	return out
}

// AdmitMember reports why member id, presenting credential, may not join; nil when it may
// (and always when admission is open). now is the admitting member's clock.
func (p *Policy) AdmitMember(now time.Time, id peer.ID, credential []byte) error {
	if !p.Admission() {
		return nil
	}
	if len(credential) == 0 {
		return fmt.Errorf("%w: this cluster admits only members with a credential from its authority (%s); issue one with shardctl credential member",
			ErrNoCredential, p.authorityList())
	}
	c, err := ParseCredential(credential)
	if err != nil {
		return fmt.Errorf("member credential: %w", err)
	}
	if err := c.check(RoleMember, id, now, p.skew, p.authorities); err != nil {
		return fmt.Errorf("member credential: %w (this cluster's authority: %s)", err, p.authorityList())
	}
	return nil
}

func (p *Policy) authorityList() string {
	ids := p.Authorities()
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = id.String()
	}
	return strings.Join(out, ", ")
}

// Admin is a verified admin request: who signed it, how the signer is an admin here, and
// what it asks (the body, as signed).
type Admin struct {
	Signed
	// Via says how the signer is an admin of this member: "admin-allow", or "credential of
	// authority <id>".
	Via string
}

// VerifyRequest decodes a signed request and checks that an admin of this member signed
// it: an identity in admin-allow, or one presenting an admin credential from a trusted
// authority that is valid at now. Errors wrap ErrBadSignature, ErrUnsigned or ErrNotAdmin.
func (p *Policy) VerifyRequest(now time.Time, raw []byte) (*Admin, error) {
	s, err := OpenSigned(raw)
	if err != nil {
		return nil, err
	}
	if s.Signer == "" {
		return nil, fmt.Errorf("%w: sign it with an admin identity (shardctl --identity FILE)", ErrUnsigned)
	}
	return p.Authorize(now, s)
}

// Authorize checks that s's signer was an admin of this member at now: in admin-allow, or
// holding an admin credential from a trusted authority valid at now. A stored request (a
// directive) is checked as of when it was issued.
func (p *Policy) Authorize(now time.Time, s *Signed) (*Admin, error) {
	if p != nil && p.admins[s.Signer] {
		return &Admin{Signed: *s, Via: "admin-allow"}, nil
	}
	if len(s.Credential) > 0 && p.Admission() {
		c, err := ParseCredential(s.Credential)
		if err == nil {
			err = c.check(RoleAdmin, s.Signer, now, p.skew, p.authorities)
		}
		if err != nil {
			return nil, fmt.Errorf("%w: %s presents an admin credential that this member does not accept: %v", ErrNotAdmin, s.Signer, err)
		}
		return &Admin{Signed: *s, Via: "credential of authority " + c.Authority.String()}, nil
	}
	if !p.HasAdmins() {
		return nil, fmt.Errorf("%w: signed by %s, and this member allows no admin: start it with --admin-allow PEER_ID or --cluster-authority ID",
			ErrNotAdmin, s.Signer)
	}
	return nil, fmt.Errorf("%w: signed by %s, which is neither in this member's admin-allow nor holds an admin credential from its cluster-authority "+
		"(sign with an admin identity: shardctl --identity FILE)", ErrNotAdmin, s.Signer)
}
