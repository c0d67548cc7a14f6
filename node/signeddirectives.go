package node

import (
	"crypto/sha256"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/shardmesh/shardmesh/admin"
	"github.com/shardmesh/shardmesh/admin/adminpb"
	"github.com/shardmesh/shardmesh/datadir"
	"github.com/shardmesh/shardmesh/engine"
	"github.com/shardmesh/shardmesh/membership"
	"github.com/shardmesh/shardmesh/remember"
	"github.com/shardmesh/shardmesh/shard"
	"github.com/shardmesh/shardmesh/trust"
)

// Directives are followed where they take effect: every member verifies each stored
// directive against its own admin set (trust.Policy) before its engine follows it, and a
// member that stored one never vouches for it. The store holds, per directive, one record
// per signer (directives.go); a member follows the latest record that verifies, setting or
// undoing the directive. A record that does not verify — signed by an identity that is not
// an admin here, unsigned in a cluster with admins, or altered — changes nothing and is
// logged once, with its signer, and counted (shardmesh_trust_directives_ignored_total).

// unsignedSigner stands in a key for the signer of an unsigned directive.
const unsignedSigner = "unsigned"

// signedDirective is a stored directive that verified here.
type signedDirective struct {
	change DirectiveChange
	signer peer.ID // "" unsigned
	issued time.Time
	via    string // how the signer is an admin here ("" without admins)
}

func (sd signedDirective) signerName() string {
	if sd.signer == "" {
		return unsignedSigner
	}
	return sd.signer.String()
}

// key is where the directive is stored.
func (sd signedDirective) key() string {
	parts, _ := sd.change.parts() // checked by openDirective
	return datadir.Key(append([]string{datadir.FamilyDirective, sd.signerName()}, parts...)...)
}

// subject says what the directive is about, whoever set or undid it.
func (sd signedDirective) subject() string {
	parts, _ := sd.change.parts()
	return datadir.Key(parts...)
}

// newer reports whether sd supersedes o (of the same subject): issued later, ties broken by
// signer so that every member picks the same one.
func (sd signedDirective) newer(o signedDirective) bool {
	if !sd.issued.Equal(o.issued) {
		return sd.issued.After(o.issued)
	}
	return sd.signer > o.signer
}

// signDirective returns change c as the request that makes it, signed with the member's
// AdminIdentity, or unsigned without one.
func (n *Node) signDirective(c DirectiveChange) ([]byte, error) {
	req := &adminpb.Request{Call: &adminpb.Request_Directive{Directive: &adminpb.DirectiveRequest{
		Kind: c.Kind, Node: string(c.Node), EntityType: c.Type, Shard: string(c.Shard), Undo: c.Undo}}}
	body, err := admin.RequestBody(req, n.host.ID(), time.Now())
	if err != nil {
		return nil, err
	}
	if n.cfg.AdminIdentity == nil {
		if n.cfg.Trust.HasAdmins() {
			return nil, fmt.Errorf("this member follows only directives signed by an admin (it has admin-allow or cluster-authority): give the program an admin identity (shardmesh.WithAdminIdentity)")
		}
		return trust.Unsigned(body), nil
	}
	return trust.Sign(n.cfg.AdminIdentity, body, nil)
}

// openDirective decodes a stored directive and checks it against this member's admin set:
// signed by an admin of this member as of when it was issued (any directive, when this
// member has no admins).
func (n *Node) openDirective(raw []byte) (signedDirective, error) {
	s, err := trust.OpenSigned(raw)
	if err != nil {
		return signedDirective{}, err
	}
	inner, err := admin.DecodeSignedBody(s.Body)
	if err != nil {
		return signedDirective{}, err
	}
	d := inner.GetDirective()
	if d == nil {
		return signedDirective{}, fmt.Errorf("the signed request is not a directive but %T", inner.Call)
	}
	sd := signedDirective{signer: s.Signer, issued: time.UnixMilli(inner.IssuedAtUnixMs), change: DirectiveChange{
		Kind: d.Kind, Node: membership.NodeID(d.Node), Type: d.EntityType, Shard: shard.ID(d.Shard), Undo: d.Undo}}
	if _, err := sd.change.parts(); err != nil {
		return sd, err
	}
	if n.cfg.Trust.HasAdmins() {
		if s.Signer == "" {
			return sd, fmt.Errorf("%w: this member follows only directives signed by an admin", trust.ErrUnsigned)
		}
		a, err := n.cfg.Trust.Authorize(sd.issued, s)
		if err != nil {
			return sd, err
		}
		sd.via = a.Via
	}
	return sd, nil
}

// followedDirectives returns the directives this member follows among the stored records:
// per subject, the latest record that verifies here, unless it is an undo.
func (n *Node) followedDirectives(recs []remember.Record) engine.Directives {
	d := engine.Directives{Draining: map[membership.NodeID]bool{}, Pins: map[string]map[shard.ID]membership.NodeID{}, Stopped: map[string]bool{}}
	latest := map[string]signedDirective{}
	var legacy []remember.Record
	for _, r := range recs {
		signer, _, _ := strings.Cut(strings.TrimPrefix(r.Key, datadir.Prefix(datadir.FamilyDirective)), datadir.Sep)
		if slices.Contains([]string{directiveDrain, directivePause, directivePin, directiveStop}, signer) {
			legacy = append(legacy, r)
			continue
		}
		sd, err := n.openDirective(r.Value)
		if err == nil && sd.key() != r.Key {
			err = fmt.Errorf("stored under %q, not under its signer and subject", r.Key)
		}
		if err == nil {
			err = n.directiveNotes.replayed(r.Key, sd.issued)
		}
		if err != nil {
			n.directiveNotes.ignored(n, r, sd, err)
			continue
		}
		if cur, ok := latest[sd.subject()]; !ok || sd.newer(cur) {
			latest[sd.subject()] = sd
		}
	}
	for _, sd := range latest {
		n.directiveNotes.followed(n, sd)
		if !sd.change.Undo {
			sd.change.apply(&d)
		}
	}
	n.legacyDirectives(legacy, &d)
	return d
}

// legacyDirectives follows the directives an earlier release stored (op␀KIND…, unsigned),
// unless this member has admins: it then follows only signed ones, and logs what it
// ignores.
func (n *Node) legacyDirectives(recs []remember.Record, d *engine.Directives) {
	for _, r := range recs {
		parts := strings.Split(strings.TrimPrefix(r.Key, datadir.Prefix(datadir.FamilyDirective)), datadir.Sep)
		c := DirectiveChange{Kind: parts[0]}
		switch {
		case c.Kind == directiveDrain && len(parts) == 2:
			c.Node = membership.NodeID(parts[1])
		case c.Kind == directivePin && len(parts) >= 3:
			c.Type, c.Shard, c.Node = parts[1], shard.ID(strings.Join(parts[2:], datadir.Sep)), membership.NodeID(r.Value)
		case c.Kind == directiveStop && len(parts) == 2:
			c.Type = parts[1]
		case c.Kind == directivePause && len(parts) == 1:
		default:
			n.log.Warn("ignored an unknown directive in the store", "key", r.Key)
			continue
		}
		if n.cfg.Trust.HasAdmins() {
			n.directiveNotes.ignored(n, r, signedDirective{change: c}, fmt.Errorf("%w: stored by an earlier release; re-issue it", trust.ErrUnsigned))
			continue
		}
		c.apply(d)
	}
}

// directiveNotes remembers which records a member has logged, so that each directive it
// follows or ignores is logged once, not at every read.
type directiveNotes struct {
	mu     sync.Mutex
	ignore map[string][32]byte  // record key → hash of the value logged
	follow map[string]string    // subject → the record followed, as logged
	newest map[string]time.Time // record key → the latest issue time seen under it
}

// replayed reports an error when the record under key was issued before one this member
// saw under the same key: an earlier request of the same signer stored again (a replay,
// which only a member can make: the member that takes a call refuses a stale one).
func (dn *directiveNotes) replayed(key string, issued time.Time) error {
	dn.mu.Lock()
	defer dn.mu.Unlock()
	if dn.newest == nil {
		dn.newest = map[string]time.Time{}
	}
	if newest, ok := dn.newest[key]; ok && issued.Before(newest) {
		return fmt.Errorf("%w: issued at %s, before the record this member saw under its key (%s)", trust.ErrReplayed,
			issued.UTC().Format(time.RFC3339Nano), newest.UTC().Format(time.RFC3339Nano))
	}
	dn.newest[key] = issued
	return nil
}

func (dn *directiveNotes) ignored(n *Node, r remember.Record, sd signedDirective, why error) {
	h := sha256.Sum256(r.Value)
	dn.mu.Lock()
	if dn.ignore == nil {
		dn.ignore = map[string][32]byte{}
	}
	seen := dn.ignore[r.Key] == h
	dn.ignore[r.Key] = h
	dn.mu.Unlock()
	if seen {
		return
	}
	n.gate.DirectiveIgnored()
	signer := sd.signerName()
	if s, err := trust.OpenSigned(r.Value); err == nil && s.Signer != "" {
		signer = s.Signer.String()
	}
	n.log.Warn("ignored an operator directive: not signed by an admin of this member", "directive", sd.change.String(),
		"signer", signer, "reason", why.Error())
}

func (dn *directiveNotes) followed(n *Node, sd signedDirective) {
	note := sd.key() + "@" + sd.issued.UTC().Format(time.RFC3339Nano)
	dn.mu.Lock()
	if dn.follow == nil {
		dn.follow = map[string]string{}
	}
	seen := dn.follow[sd.subject()] == note
	dn.follow[sd.subject()] = note
	dn.mu.Unlock()
	if !seen {
		n.log.Info("following an operator directive", "directive", sd.change.String(), "signer", sd.signerName(), "via", sd.via,
			"issued", sd.issued.UTC().Format(time.RFC3339))
	}
}
