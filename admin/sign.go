package admin

import (
	"crypto/rand"
	"errors"
	"fmt"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"
	"google.golang.org/protobuf/proto"

	"github.com/shardmesh/shardmesh/admin/adminpb"
	"github.com/shardmesh/shardmesh/trust"
	"github.com/shardmesh/shardmesh/wire"
)

// SignRequest returns req as a request signed by key, the caller's admin identity (with its
// admin credential, when it has one), for member target: a fresh nonce, the time now and the
// target go into what is signed, so that the request cannot be replayed or sent elsewhere.
func SignRequest(req *adminpb.Request, key crypto.PrivKey, credential []byte, target peer.ID, now time.Time) (*adminpb.Request, error) {
	body, err := RequestBody(req, target.String(), now, nil)
	if err != nil {
		return nil, err
	}
	raw, err := trust.Sign(key, body, credential)
	if err != nil {
		return nil, err
	}
	return &adminpb.Request{Signed: raw}, nil
}

// RequestBody returns req with nonce (nil: 16 fresh random bytes), the time now and target
// (the member it is for, by the text form of its peer id), encoded as the body of a signed
// request (trust.Sign, trust.Unsigned).
func RequestBody(req *adminpb.Request, target string, now time.Time, nonce []byte) ([]byte, error) {
	inner := proto.Clone(req).(*adminpb.Request)
	inner.ProtocolVersion = wire.ProtocolVersion
	inner.Signed = nil
	if nonce == nil {
		nonce = make([]byte, 16)
		_, _ = rand.Read(nonce)
	}
	inner.Nonce = nonce
	inner.IssuedAtUnixMs = now.UnixMilli()
	inner.Target = target
	return proto.MarshalOptions{Deterministic: true}.Marshal(inner)
}

// DecodeSignedBody decodes the body of a signed request (trust.Signed.Body) as a request and
// checks it as DecodeRequest does; a signed request inside is refused.
func DecodeSignedBody(body []byte) (*adminpb.Request, error) {
	req, err := DecodeRequest(body)
	if err != nil {
		return nil, fmt.Errorf("signed request: %w", err)
	}
	if len(req.Signed) > 0 {
		return nil, errors.New("signed request: a signed request inside another")
	}
	return req, nil
}
