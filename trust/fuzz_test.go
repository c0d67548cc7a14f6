package trust

import (
	"bytes"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
)

// FuzzVerifyRequest feeds arbitrary bytes to the verification of signed admin requests: it
// never panics, and whatever it accepts was signed by an admin over exactly the body that
// admin signed. Seeds: requests signed by an admin-allow identity, by a holder of an admin
// credential, by an intruder, and unsigned.
func FuzzVerifyRequest(f *testing.F) {
	auth, authID := newKey(f)
	admin, adminID := newKey(f)
	certified, certifiedID := newKey(f)
	intruder, _ := newKey(f)
	cred, err := IssueCredential(auth, RoleAdmin, certifiedID, t0, time.Hour)
	if err != nil {
		f.Fatal(err)
	}
	bodies := map[peer.ID][]byte{adminID: []byte("drain 12D3KooW…"), certifiedID: []byte("types stop counter")}
	for _, seed := range [][]byte{
		must(Sign(admin, bodies[adminID], nil)),
		must(Sign(certified, bodies[certifiedID], cred)),
		must(Sign(intruder, []byte("data remove"), nil)),
		Unsigned([]byte("pause")),
	} {
		f.Add(seed)
	}
	p := NewPolicy([]peer.ID{authID}, []peer.ID{adminID})
	f.Fuzz(func(t *testing.T, raw []byte) {
		a, err := p.VerifyRequest(t0, raw)
		if err != nil {
			return
		}
		want, ok := bodies[a.Signer]
		if !ok {
			t.Fatalf("accepted a request signed by %s, not an admin", a.Signer)
		}
		if !bytes.Equal(a.Body, want) {
			t.Fatalf("accepted a body %q that %s never signed", a.Body, a.Signer)
		}
	})
}

// FuzzAdmitMember feeds arbitrary credentials to admission: it never panics, and it admits
// only the member a trusted authority issued a member credential to.
func FuzzAdmitMember(f *testing.F) {
	auth, authID := newKey(f)
	other, _ := newKey(f)
	_, member := newKey(f)
	f.Add(must(IssueCredential(auth, RoleMember, member, t0, time.Hour)))
	f.Add(must(IssueCredential(auth, RoleAdmin, member, t0, time.Hour)))
	f.Add(must(IssueCredential(other, RoleMember, member, t0, time.Hour)))
	p := NewPolicy([]peer.ID{authID}, nil)
	f.Fuzz(func(t *testing.T, raw []byte) {
		if err := p.AdmitMember(t0, member, raw); err != nil {
			return
		}
		c, err := ParseCredential(raw)
		if err != nil || c.Authority != authID || c.Subject != member || c.Role != RoleMember {
			t.Fatalf("admitted with %+v (%v)", c, err)
		}
	})
}

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}
