package node

import (
	"crypto/sha256"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"google.golang.org/protobuf/proto"

	"github.com/shardmesh/shardmesh/admin"
	"github.com/shardmesh/shardmesh/admin/adminpb"
	"github.com/shardmesh/shardmesh/datadir"
	"github.com/shardmesh/shardmesh/engine"
	"github.com/shardmesh/shardmesh/membership"
	"github.com/shardmesh/shardmesh/remember"
	"github.com/shardmesh/shardmesh/shard"
	"github.com/shardmesh/shardmesh/trust"
)

// Directives are followed where they take effect: every member's core verifies each stored
// directive against its own admin set (trust.Policy) before its engine follows it, and a
// member that stored one never vouches for it. The store holds, per directive, one record
// per signer (directives.go); a member follows the latest record that verifies, setting or
// undoing the directive. A record that does not verify — signed by an identity that is not
// an admin here, unsigned in a cluster with admins, altered, or an earlier request of its
// signer stored again (a replay) — changes nothing and is logged once, with its signer, and
// counted (shardmesh_trust_directives_ignored_total).

// unsignedSigner stands in a key for the signer of an unsigned directive.
const unsignedSigner = "unsigned"

// signedDirective is a stored directive that verified here.
type signedDirective struct {
	change DirectiveChange
	signer string // its peer id's text form, unsignedSigner when unsigned
	issued time.Time
	via    string // how the signer is an admin here ("" without admins)
}

// key is where the directive is stored.
func (sd signedDirective) key() string {
	parts, _ := sd.change.parts() // checked by openDirective
	return datadir.Key(append([]string{datadir.FamilyDirective, sd.signer}, parts...)...)
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

// SignDirective returns change c as the request that makes it, stored by member by at
// issued: signed with key, an admin identity, or unsigned when key is nil (followed only
// by members without admins). nonce is the request's nonce (nil: fresh random bytes).
func SignDirective(c DirectiveChange, key crypto.PrivKey, by membership.NodeID, issued time.Time, nonce []byte) ([]byte, error) {
	if _, err := c.parts(); err != nil {
		return nil, err
	}
	req := &adminpb.Request{Call: &adminpb.Request_Directive{Directive: &adminpb.DirectiveRequest{
		Kind: c.Kind, Node: string(c.Node), EntityType: c.Type, Shard: string(c.Shard), Undo: c.Undo}}}
	body, err := admin.RequestBody(req, string(by), issued, nonce)
	if err != nil {
		return nil, err
	}
	if key == nil {
		return trust.Unsigned(body), nil
	}
	return trust.Sign(key, body, nil)
}

// openDirective decodes a stored directive and checks it against policy, the admin set of
// the member that follows it: signed by one of its admins as of when it was issued (any
// directive, when it has no admins).
func openDirective(policy *trust.Policy, raw []byte) (signedDirective, error) {
	s, err := trust.OpenSigned(raw)
	if err != nil {
		return signedDirective{}, err
	}
	// Not admin.DecodeSignedBody: a directive stays in the store across upgrades, so it is
	// not refused for another protocol version than this build's, as a call is; what it
	// says is checked here.
	var inner adminpb.Request
	if err := proto.Unmarshal(s.Body, &inner); err != nil {
		return signedDirective{}, fmt.Errorf("the signed request does not decode: %w", err)
	}
	d := inner.GetDirective()
	if d == nil || len(inner.Signed) > 0 {
		return signedDirective{}, fmt.Errorf("the signed request is not a directive but %T", inner.Call)
	}
	sd := signedDirective{signer: unsignedSigner, issued: time.UnixMilli(inner.IssuedAtUnixMs), change: DirectiveChange{
		Kind: d.Kind, Node: membership.NodeID(d.Node), Type: d.EntityType, Shard: shard.ID(d.Shard), Undo: d.Undo}}
	if s.Signer != "" {
		sd.signer = s.Signer.String()
	}
	if _, err := sd.change.parts(); err != nil {
		return sd, err
	}
	if policy.HasAdmins() {
		if s.Signer == "" {
			return sd, fmt.Errorf("%w: this member follows only directives signed by an admin", trust.ErrUnsigned)
		}
		a, err := policy.Authorize(sd.issued, s)
		if err != nil {
			return sd, err
		}
		sd.via = a.Via
	}
	return sd, nil
}

// ParseDirectives returns the directives a member with policy (nil: no admins) follows among
// recs, the records of a scan of datadir.FamilyDirective: per directive, the latest record
// that verifies against policy, unless it undoes the directive. What does not verify is left
// out and logged. It remembers nothing from one call to the next (a member's core does:
// replays, and what it logged).
func ParseDirectives(recs []remember.Record, policy *trust.Policy, log *slog.Logger) engine.Directives {
	r := directiveReader{policy: policy, log: log}
	return r.read(recs)
}

// directiveReader reads the directives a member follows from the stored records, and
// remembers across reads what it logged (each directive followed or ignored is logged once,
// not at every read) and the latest issue time seen under each key (a replay is ignored).
type directiveReader struct {
	policy  *trust.Policy
	log     *slog.Logger
	ignored func() // counts a record ignored (nil: none)

	ignore map[string][32]byte  // record key → hash of the value logged
	follow map[string]string    // subject → the record followed, as logged
	newest map[string]time.Time // record key → the latest issue time seen under it
}

// read returns the directives followed among recs: per subject, the latest record that
// verifies, unless it is an undo.
func (r *directiveReader) read(recs []remember.Record) engine.Directives {
	d := engine.Directives{Draining: map[membership.NodeID]bool{}, Pins: map[string]map[shard.ID]membership.NodeID{}, Stopped: map[string]bool{}}
	latest := map[string]signedDirective{}
	var legacy []remember.Record
	for _, rec := range recs {
		signer, _, _ := strings.Cut(strings.TrimPrefix(rec.Key, datadir.Prefix(datadir.FamilyDirective)), datadir.Sep)
		if slices.Contains([]string{directiveDrain, directivePause, directivePin, directiveStop}, signer) {
			legacy = append(legacy, rec)
			continue
		}
		sd, err := openDirective(r.policy, rec.Value)
		if err == nil && sd.key() != rec.Key {
			err = fmt.Errorf("stored under %q, not under its signer and subject", rec.Key)
		}
		if err == nil {
			err = r.replayed(rec.Key, sd.issued)
		}
		if err != nil {
			r.ignoredRecord(rec, sd, err)
			continue
		}
		if cur, ok := latest[sd.subject()]; !ok || sd.newer(cur) {
			latest[sd.subject()] = sd
		}
	}
	for _, subject := range slices.Sorted(maps.Keys(latest)) { // logged in the same order every time
		sd := latest[subject]
		r.followed(sd)
		if !sd.change.Undo {
			sd.change.apply(&d)
		}
	}
	r.legacyDirectives(legacy, &d)
	return d
}

// legacyDirectives follows the directives an earlier release stored (op␀KIND…, unsigned),
// unless this member has admins: it then follows only signed ones, and logs what it
// ignores.
func (r *directiveReader) legacyDirectives(recs []remember.Record, d *engine.Directives) {
	for _, rec := range recs {
		parts := strings.Split(strings.TrimPrefix(rec.Key, datadir.Prefix(datadir.FamilyDirective)), datadir.Sep)
		c := DirectiveChange{Kind: parts[0]}
		switch {
		case c.Kind == directiveDrain && len(parts) == 2:
			c.Node = membership.NodeID(parts[1])
		case c.Kind == directivePin && len(parts) >= 3:
			c.Type, c.Shard, c.Node = parts[1], shard.ID(strings.Join(parts[2:], datadir.Sep)), membership.NodeID(rec.Value)
		case c.Kind == directiveStop && len(parts) == 2:
			c.Type = parts[1]
		case c.Kind == directivePause && len(parts) == 1:
		default:
			r.log.Warn("ignored an unknown directive in the store", "key", rec.Key)
			continue
		}
		if r.policy.HasAdmins() {
			r.ignoredRecord(rec, signedDirective{change: c, signer: unsignedSigner}, fmt.Errorf("%w: stored by an earlier release; re-issue it", trust.ErrUnsigned))
			continue
		}
		c.apply(d)
	}
}

// replayed reports an error when the record under key was issued before one this member
// saw under the same key: an earlier request of the same signer stored again (a replay,
// which only a member can make: the member that takes a call refuses a stale one).
func (r *directiveReader) replayed(key string, issued time.Time) error {
	if r.newest == nil {
		r.newest = map[string]time.Time{}
	}
	if newest, ok := r.newest[key]; ok && issued.Before(newest) {
		return fmt.Errorf("%w: issued at %s, before the record this member saw under its key (%s)", trust.ErrReplayed,
			issued.UTC().Format(time.RFC3339Nano), newest.UTC().Format(time.RFC3339Nano))
	}
	r.newest[key] = issued
	return nil
}

// ignoredRecord logs (once per record and value) and counts a record not followed.
func (r *directiveReader) ignoredRecord(rec remember.Record, sd signedDirective, why error) {
	h := sha256.Sum256(rec.Value)
	if r.ignore == nil {
		r.ignore = map[string][32]byte{}
	}
	if r.ignore[rec.Key] == h {
		return
	}
	r.ignore[rec.Key] = h
	if r.ignored != nil {
		r.ignored()
	}
	signer := sd.signer
	if s, err := trust.OpenSigned(rec.Value); err == nil && s.Signer != "" {
		signer = s.Signer.String()
	}
	r.log.Warn("ignored an operator directive: not signed by an admin of this member", "directive", sd.change.String(),
		"signer", signer, "reason", why.Error())
}

// followed logs (once per record) a directive followed.
func (r *directiveReader) followed(sd signedDirective) {
	note := sd.key() + "@" + sd.issued.UTC().Format(time.RFC3339Nano)
	if r.follow == nil {
		r.follow = map[string]string{}
	}
	if r.follow[sd.subject()] == note {
		return
	}
	r.follow[sd.subject()] = note
	r.log.Info("following an operator directive", "directive", sd.change.String(), "signer", sd.signer, "via", sd.via,
		"issued", sd.issued.UTC().Format(time.RFC3339))
}
