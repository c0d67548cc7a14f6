package trust

import (
	"bytes"
	"crypto/rand"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"
	"google.golang.org/protobuf/proto"

	"github.com/shardmesh/shardmesh/trust/trustpb"
)

// Role is what a credential admits its subject as.
type Role = trustpb.Role

// Roles of a credential.
const (
	RoleMember = trustpb.Role_MEMBER
	RoleAdmin  = trustpb.Role_ADMIN
)

// RoleName names a role as the command line and the PEM block do.
func RoleName(r Role) string {
	switch r {
	case RoleMember:
		return "member"
	case RoleAdmin:
		return "admin"
	}
	return "unknown role"
}

// Context strings of the signatures: a signature of one kind is never valid as another.
const (
	credentialContext = "shardmesh credential v1"
	requestContext    = "shardmesh admin request v1"
)

// DefaultSkew is how far apart the clocks of the members and the machines that issue
// credentials and sign requests may be.
const DefaultSkew = 5 * time.Minute

// maxCredentialSize bounds a credential, in bytes, so that a hostile one costs nothing.
const maxCredentialSize = 4096

// Errors of credentials and signed requests; the errors returned wrap them and say more.
var (
	// ErrNoCredential: a member credential is needed and none was presented.
	ErrNoCredential = errors.New("no member credential")
	// ErrBadCredential: the credential does not decode, its signature does not verify, it
	// names another identity or role, or it is not valid now.
	ErrBadCredential = errors.New("credential not valid")
	// ErrUntrustedAuthority: the credential was issued by an authority this member does not
	// trust (its cluster-authority).
	ErrUntrustedAuthority = errors.New("credential from an authority this member does not trust")
	// ErrBadSignature: a signed request does not decode or its signature does not verify.
	ErrBadSignature = errors.New("bad signature")
	// ErrUnsigned: a request that must be signed is not.
	ErrUnsigned = errors.New("request not signed")
	// ErrNotAdmin: the request is signed by an identity that is not in this member's admin set.
	ErrNotAdmin = errors.New("not an admin of this member")
)

// Credential is a decoded, signature-checked credential. Check a credential with
// Policy.AdmitMember or Policy.VerifyRequest; ParseCredential checks only that its
// authority signed it.
type Credential struct {
	Role      Role
	Subject   peer.ID
	Authority peer.ID
	NotBefore time.Time
	NotAfter  time.Time
	// Raw is the credential as it travels (trustpb.Credential).
	Raw []byte
}

// IssueCredential signs a credential of role for subject with the authority's key, valid
// from now - DefaultSkew until now + validFor, and returns it as it travels.
func IssueCredential(authority crypto.PrivKey, role Role, subject peer.ID, now time.Time, validFor time.Duration) ([]byte, error) {
	if err := subject.Validate(); err != nil {
		return nil, fmt.Errorf("credential subject: %w", err)
	}
	if _, err := subject.ExtractPublicKey(); err != nil {
		return nil, fmt.Errorf("credential subject %s: not an Ed25519 peer id: %w", subject, err)
	}
	if validFor <= 0 {
		return nil, fmt.Errorf("credential validity %v: want > 0", validFor)
	}
	authID, err := peer.IDFromPrivateKey(authority)
	if err != nil {
		return nil, fmt.Errorf("authority key: %w", err)
	}
	serial := make([]byte, 16)
	_, _ = rand.Read(serial)
	body, err := proto.Marshal(&trustpb.CredentialBody{Version: 1, Role: role, Subject: []byte(subject),
		NotBeforeUnix: now.Add(-DefaultSkew).Unix(), NotAfterUnix: now.Add(validFor).Unix(), Serial: serial})
	if err != nil {
		return nil, err
	}
	sig, err := authority.Sign(signedBytes(credentialContext, body))
	if err != nil {
		return nil, fmt.Errorf("sign the credential: %w", err)
	}
	return proto.Marshal(&trustpb.Credential{Body: body, Authority: []byte(authID), Signature: sig})
}

// ParseCredential decodes a credential and checks that the authority it names signed it;
// whether this member trusts that authority, and for what, is Policy's to say.
func ParseCredential(raw []byte) (*Credential, error) {
	if len(raw) == 0 {
		return nil, ErrNoCredential
	}
	if len(raw) > maxCredentialSize {
		return nil, fmt.Errorf("%w: %d bytes (at most %d)", ErrBadCredential, len(raw), maxCredentialSize)
	}
	var c trustpb.Credential
	if err := proto.Unmarshal(raw, &c); err != nil {
		return nil, fmt.Errorf("%w: does not decode: %v", ErrBadCredential, err)
	}
	auth, err := peer.IDFromBytes(c.Authority)
	if err != nil {
		return nil, fmt.Errorf("%w: authority is not a peer id: %v", ErrBadCredential, err)
	}
	if err := verify(auth, credentialContext, c.Body, c.Signature); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadCredential, err)
	}
	var b trustpb.CredentialBody
	if err := proto.Unmarshal(c.Body, &b); err != nil {
		return nil, fmt.Errorf("%w: body does not decode: %v", ErrBadCredential, err)
	}
	if b.Version != 1 {
		return nil, fmt.Errorf("%w: version %d (this release reads 1)", ErrBadCredential, b.Version)
	}
	subject, err := peer.IDFromBytes(b.Subject)
	if err != nil {
		return nil, fmt.Errorf("%w: subject is not a peer id: %v", ErrBadCredential, err)
	}
	return &Credential{Role: b.Role, Subject: subject, Authority: auth,
		NotBefore: time.Unix(b.NotBeforeUnix, 0), NotAfter: time.Unix(b.NotAfterUnix, 0), Raw: raw}, nil
}

// check reports why c does not admit subject as role at now, given the trusted
// authorities; nil when it does.
func (c *Credential) check(role Role, subject peer.ID, now time.Time, skew time.Duration, authorities map[peer.ID]bool) error {
	switch {
	case !authorities[c.Authority]:
		return fmt.Errorf("%w: issued by %s", ErrUntrustedAuthority, c.Authority)
	case c.Role != role:
		return fmt.Errorf("%w: a %s credential, not a %s one", ErrBadCredential, RoleName(c.Role), RoleName(role))
	case c.Subject != subject:
		return fmt.Errorf("%w: issued to %s, presented by %s", ErrBadCredential, c.Subject, subject)
	case now.Add(skew).Before(c.NotBefore):
		return fmt.Errorf("%w: valid only from %s (a clock off?)", ErrBadCredential, c.NotBefore.UTC().Format(time.RFC3339))
	case now.Add(-skew).After(c.NotAfter):
		return fmt.Errorf("%w: expired on %s (issue a new one: shardctl credential %s)", ErrBadCredential, c.NotAfter.UTC().Format(time.RFC3339), RoleName(role))
	}
	return nil
}

// signedBytes is what a signature of kind context covers: the context, a 0 byte, the body.
func signedBytes(context string, body []byte) []byte {
	out := make([]byte, 0, len(context)+1+len(body))
	out = append(out, context...)
	out = append(out, 0)
	return append(out, body...)
}

// verify checks that id's key signed body under context.
func verify(id peer.ID, context string, body, sig []byte) error {
	pub, err := id.ExtractPublicKey()
	if err != nil {
		return fmt.Errorf("%s holds no public key (only Ed25519 identities sign): %v", id, err)
	}
	ok, err := pub.Verify(signedBytes(context, body), sig)
	if err != nil || !ok {
		return fmt.Errorf("the signature of %s does not verify", id)
	}
	return nil
}

// PEM block types of credential files.
const (
	pemMember = "SHARDMESH MEMBER CREDENTIAL"
	pemAdmin  = "SHARDMESH ADMIN CREDENTIAL"
)

// EncodeCredentialFile returns the text of a credential file: one PEM block whose headers
// say, for people, what the signed body holds (only the body is trusted).
func EncodeCredentialFile(raw []byte) ([]byte, error) {
	c, err := ParseCredential(raw)
	if err != nil {
		return nil, err
	}
	typ := pemMember
	if c.Role == RoleAdmin {
		typ = pemAdmin
	}
	var buf bytes.Buffer
	err = pem.Encode(&buf, &pem.Block{Type: typ, Headers: map[string]string{
		"Subject":   c.Subject.String(),
		"Authority": c.Authority.String(),
		"Not-After": c.NotAfter.UTC().Format(time.RFC3339),
	}, Bytes: raw})
	return buf.Bytes(), err
}

// ReadCredentialFile reads a credential file written by WriteCredentialFile and checks that
// its authority signed it.
func ReadCredentialFile(path string) (*Credential, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("credential file: %w", err)
	}
	block, _ := pem.Decode(data)
	if block == nil || (block.Type != pemMember && block.Type != pemAdmin) {
		return nil, fmt.Errorf("credential file %s: no %q or %q block (write one with shardctl credential member|admin)", path, pemMember, pemAdmin)
	}
	c, err := ParseCredential(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("credential file %s: %w", path, err)
	}
	return c, nil
}

// WriteCredentialFile writes a credential to path (mode 0644: a credential is not a secret;
// it names an identity and proves nothing without that identity's key). It refuses to
// overwrite an existing file unless replace. The file is written beside path and then moved
// into place, so a member never reads half a credential.
func WriteCredentialFile(path string, raw []byte, replace bool) error {
	text, err := EncodeCredentialFile(raw)
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return fmt.Errorf("write credential: %w", err)
	}
	defer func() { _ = os.Remove(tmp.Name()) }()
	_, err = tmp.Write(text)
	if err == nil {
		err = tmp.Chmod(0o644)
	}
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("write credential %s: %w", path, err)
	}
	if replace {
		err = os.Rename(tmp.Name(), path)
	} else {
		err = os.Link(tmp.Name(), path) // fails if path exists
	}
	if err != nil {
		return fmt.Errorf("write credential %s: %w", path, err)
	}
	return nil
}
