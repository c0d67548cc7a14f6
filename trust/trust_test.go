package trust

import (
	"bytes"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/shardmesh/shardmesh/membership"
)

func newKey(t testing.TB) (crypto.PrivKey, peer.ID) {
	t.Helper()
	k, _, err := crypto.GenerateEd25519Key(nil)
	if err != nil {
		t.Fatal(err)
	}
	id, err := peer.IDFromPrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	return k, id
}

var t0 = time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)

func TestAdmitMember(t *testing.T) {
	auth, authID := newKey(t)
	other, _ := newKey(t)
	_, member := newKey(t)
	_, stranger := newKey(t)
	cred, err := IssueCredential(auth, RoleMember, member, t0, 24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	foreign, _ := IssueCredential(other, RoleMember, member, t0, 24*time.Hour)
	adminCred, _ := IssueCredential(auth, RoleAdmin, member, t0, 24*time.Hour)
	tampered := bytes.Clone(cred)
	tampered[len(tampered)/3] ^= 1
	p := NewPolicy([]peer.ID{authID}, nil)
	cases := []struct {
		name string
		id   peer.ID
		cred []byte
		at   time.Time
		want error
	}{
		{"valid", member, cred, t0.Add(time.Hour), nil},
		{"skewed start", member, cred, t0.Add(-8 * time.Minute), nil},
		{"before", member, cred, t0.Add(-11 * time.Minute), ErrBadCredential},
		{"expired", member, cred, t0.Add(25 * time.Hour), ErrBadCredential},
		{"none", member, nil, t0, ErrNoCredential},
		{"another's", stranger, cred, t0, ErrBadCredential},
		{"foreign authority", member, foreign, t0, ErrUntrustedAuthority},
		{"admin role", member, adminCred, t0, ErrBadCredential},
		{"tampered", member, tampered, t0, ErrBadCredential},
		{"garbage", member, []byte("not a credential"), t0, ErrBadCredential},
	}
	for _, c := range cases {
		err := p.AdmitMember(c.at, c.id, c.cred)
		if c.want == nil && err != nil || c.want != nil && !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
	}
	if err := (&Policy{}).AdmitMember(t0, stranger, nil); err != nil {
		t.Errorf("open admission refused: %v", err)
	}
	if err := (*Policy)(nil).AdmitMember(t0, stranger, nil); err != nil {
		t.Errorf("nil policy refused: %v", err)
	}
}

func TestVerifyRequest(t *testing.T) {
	auth, authID := newKey(t)
	allowed, allowedID := newKey(t)
	certified, certifiedID := newKey(t)
	intruder, intruderID := newKey(t)
	adminCred, _ := IssueCredential(auth, RoleAdmin, certifiedID, t0, time.Hour)
	memberCred, _ := IssueCredential(auth, RoleMember, intruderID, t0, time.Hour)
	stolenCred, _ := IssueCredential(auth, RoleAdmin, allowedID, t0, time.Hour) // presented by someone else
	p := NewPolicy([]peer.ID{authID}, []peer.ID{allowedID})
	body := []byte("pause rebalancing")
	sign := func(k crypto.PrivKey, cred []byte) []byte {
		raw, err := Sign(k, body, cred)
		if err != nil {
			t.Fatal(err)
		}
		return raw
	}
	for name, c := range map[string]struct {
		raw  []byte
		want error
		by   peer.ID
	}{
		"admin-allow":          {sign(allowed, nil), nil, allowedID},
		"admin credential":     {sign(certified, adminCred), nil, certifiedID},
		"not an admin":         {sign(intruder, nil), ErrNotAdmin, ""},
		"member credential":    {sign(intruder, memberCred), ErrNotAdmin, ""},
		"another's credential": {sign(intruder, stolenCred), ErrNotAdmin, ""},
		"unsigned":             {Unsigned(body), ErrUnsigned, ""},
		"garbage":              {[]byte{0xff, 0x01}, ErrBadSignature, ""},
	} {
		a, err := p.VerifyRequest(t0, c.raw)
		switch {
		case c.want != nil && !errors.Is(err, c.want):
			t.Errorf("%s: %v, want %v", name, err, c.want)
		case c.want == nil && err != nil:
			t.Errorf("%s: %v", name, err)
		case c.want == nil && (a.Signer != c.by || !bytes.Equal(a.Body, body)):
			t.Errorf("%s: signer %s body %q", name, a.Signer, a.Body)
		}
	}
	// Any change to the signed bytes is refused.
	raw := sign(allowed, nil)
	for i := range raw {
		bad := bytes.Clone(raw)
		bad[i] ^= 0x20
		if a, err := p.VerifyRequest(t0, bad); err == nil && !bytes.Equal(a.Body, body) {
			t.Fatalf("byte %d flipped: verified with body %q", i, a.Body)
		}
	}
	// An expired admin credential admits no more.
	if _, err := p.VerifyRequest(t0.Add(2*time.Hour), sign(certified, adminCred)); !errors.Is(err, ErrNotAdmin) {
		t.Errorf("expired admin credential: %v", err)
	}
	// A member without admins refuses every signed request, saying so.
	if _, err := NewPolicy(nil, nil).VerifyRequest(t0, sign(allowed, nil)); !errors.Is(err, ErrNotAdmin) || !strings.Contains(err.Error(), "allows no admin") {
		t.Errorf("no admins: %v", err)
	}
}

func TestReplayGuard(t *testing.T) {
	g := NewReplayGuard(time.Minute)
	n1, n2 := []byte("nonce-0001"), []byte("nonce-0002")
	if err := g.Check(n1, t0, t0); err != nil {
		t.Fatal(err)
	}
	if err := g.Check(n1, t0, t0.Add(time.Second)); !errors.Is(err, ErrReplayed) {
		t.Errorf("replay: %v", err)
	}
	if err := g.Check(n2, t0.Add(-2*time.Minute), t0); !errors.Is(err, ErrReplayed) {
		t.Errorf("stale: %v", err)
	}
	if err := g.Check(n2, t0.Add(2*time.Minute), t0); !errors.Is(err, ErrReplayed) {
		t.Errorf("from the future: %v", err)
	}
	if err := g.Check(nil, t0, t0); !errors.Is(err, ErrReplayed) {
		t.Errorf("no nonce: %v", err)
	}
	if err := g.Check(n2, t0.Add(30*time.Second), t0); err != nil {
		t.Errorf("within the window: %v", err)
	}
}

func TestCredentialFile(t *testing.T) {
	auth, authID := newKey(t)
	_, member := newKey(t)
	raw, _ := IssueCredential(auth, RoleMember, member, t0, time.Hour)
	path := filepath.Join(t.TempDir(), "member.credential")
	if err := WriteCredentialFile(path, raw, false); err != nil {
		t.Fatal(err)
	}
	if err := WriteCredentialFile(path, raw, false); !errors.Is(err, os.ErrExist) {
		t.Errorf("overwrote without replace: %v", err)
	}
	if err := WriteCredentialFile(path, raw, true); err != nil {
		t.Errorf("replace: %v", err)
	}
	c, err := ReadCredentialFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if c.Subject != member || c.Authority != authID || c.Role != RoleMember || !bytes.Equal(c.Raw, raw) {
		t.Errorf("read back: %+v", c)
	}
	text, _ := os.ReadFile(path)
	if !strings.Contains(string(text), "SHARDMESH MEMBER CREDENTIAL") || !strings.Contains(string(text), member.String()) {
		t.Errorf("file:\n%s", text)
	}
	if err := os.WriteFile(path+".bad", []byte("hello"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadCredentialFile(path + ".bad"); err == nil || !strings.Contains(err.Error(), "shardctl credential") {
		t.Errorf("a file without a credential: %v", err)
	}
}

// logBuffer collects log lines.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func TestGate(t *testing.T) {
	var logs logBuffer
	var changes [][2]int
	g, err := NewGate(GateConfig{
		Logger:     slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		RemoteAddr: func(peer.ID) string { return "/ip4/10.0.0.9/tcp/4001" },
		Changed:    func(a, g []membership.Member) { changes = append(changes, [2]int{len(a), len(g)}) },
		FlushEvery: time.Hour, // flushed by hand below
	})
	if err != nil {
		t.Fatal(err)
	}
	_, a := newKey(t)
	_, b := newKey(t)
	_, stranger := newKey(t)
	m := func(id peer.ID, s membership.Status) membership.Member {
		return membership.Member{Node: membership.NodeID(id.String()), Status: s}
	}
	if g.Admits(a) {
		t.Fatal("admits before any membership")
	}
	g.SetMembers([]membership.Member{m(a, membership.Up), m(b, membership.Joining)})
	if !g.Admits(a) || !g.Admits(b) || g.Admits(stranger) {
		t.Fatalf("after the first membership: a %v b %v stranger %v", g.Admits(a), g.Admits(b), g.Admits(stranger))
	}
	g.SetMembers([]membership.Member{m(a, membership.Up), m(b, membership.Down)})
	if g.Admits(b) {
		t.Fatal("a Down member is still admitted")
	}
	if len(changes) != 2 || changes[0] != [2]int{2, 0} || changes[1] != [2]int{0, 1} {
		t.Errorf("changes: %v", changes)
	}
	g.Refused(stranger, "/shardmesh/replica/1")
	g.Refused(stranger, "/shardmesh/region/1")
	g.Refused(b, "/shardmesh/replica/1")
	g.flush()
	out := logs.String()
	if !strings.Contains(out, "refused frames from a peer that is not a member") {
		t.Fatalf("no warning:\n%s", out)
	}
	if !strings.Contains(out, stranger.String()) || !strings.Contains(out, "frames=2") || !strings.Contains(out, "/ip4/10.0.0.9/") ||
		!strings.Contains(out, "protocols=/shardmesh/replica/1,/shardmesh/region/1") {
		t.Errorf("the warning does not say who, from where, what:\n%s", out)
	}
	if !strings.Contains(out, "level=DEBUG msg=\"dropped frames from a former member\"") {
		t.Errorf("a former member is warned of:\n%s", out)
	}
	g.JoinRefused(stranger, ErrNoCredential)
	g.JoinRefused(stranger, ErrNoCredential)
	if n := strings.Count(logs.String(), "join refused"); n != 1 {
		t.Errorf("join refusals logged %d times, want once a minute", n)
	}
}
