package trust

import (
	"fmt"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"
	"google.golang.org/protobuf/proto"

	"github.com/shardmesh/shardmesh/trust/trustpb"
)

// MaxSignedSize bounds a signed request, in bytes (a request is small; the admin protocol's
// frames are larger).
const MaxSignedSize = 64 << 10

// Signed is a decoded request whose signature, if it has one, verifies. Body is the request
// exactly as signed; what it means is the caller's to decode.
type Signed struct {
	Body []byte
	// Signer is the identity that signed it; "" for an unsigned request (Unsigned).
	Signer peer.ID
	// Credential is the signer's admin credential, as it came (nil: none); Policy checks it.
	Credential []byte
	// Raw is the request as it travels (trustpb.Signed), to pass on or store unchanged.
	Raw []byte
}

// Sign signs body with an admin identity's key, attaching its admin credential if it has
// one (nil: none), and returns the signed request as it travels.
func Sign(key crypto.PrivKey, body, credential []byte) ([]byte, error) {
	id, err := peer.IDFromPrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("sign: %w", err)
	}
	sig, err := key.Sign(signedBytes(requestContext, body))
	if err != nil {
		return nil, fmt.Errorf("sign: %w", err)
	}
	return proto.Marshal(&trustpb.Signed{Body: body, Signer: []byte(id), Signature: sig, Credential: credential})
}

// Unsigned wraps body as a request nobody signed: what a member without an admin set
// accepts from a program that has no admin identity.
func Unsigned(body []byte) []byte {
	out, _ := proto.Marshal(&trustpb.Signed{Body: body}) // bytes only: cannot fail
	return out
}

// OpenSigned decodes a request and, when it is signed, verifies the signature. It says
// nothing of whether the signer may ask for anything: that is Policy.VerifyRequest.
func OpenSigned(raw []byte) (*Signed, error) {
	if len(raw) > MaxSignedSize {
		return nil, fmt.Errorf("%w: %d bytes (at most %d)", ErrBadSignature, len(raw), MaxSignedSize)
	}
	var m trustpb.Signed
	if err := proto.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("%w: does not decode: %v", ErrBadSignature, err)
	}
	s := &Signed{Body: m.Body, Raw: raw}
	if len(m.Signer) == 0 && len(m.Signature) == 0 {
		if len(m.Credential) > 0 {
			return nil, fmt.Errorf("%w: a credential without a signature", ErrBadSignature)
		}
		return s, nil
	}
	signer, err := peer.IDFromBytes(m.Signer)
	if err != nil {
		return nil, fmt.Errorf("%w: the signer is not a peer id: %v", ErrBadSignature, err)
	}
	if err := verify(signer, requestContext, m.Body, m.Signature); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadSignature, err)
	}
	s.Signer, s.Credential = signer, m.Credential
	return s, nil
}
