package admin

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
	"google.golang.org/protobuf/proto"

	"github.com/shardmesh/shardmesh/admin/adminpb"
	"github.com/shardmesh/shardmesh/p2p"
	"github.com/shardmesh/shardmesh/wire"
)

// CallError is a call the member refused or could not carry out.
type CallError struct {
	Code    adminpb.Code
	Message string
}

func (e *CallError) Error() string { return e.Message }

// openCall opens an admin stream to member to and sends req on it. The stream's deadline is
// ctx's, or CallTimeout.
func openCall(ctx context.Context, host *p2p.Host, to peer.ID, req *adminpb.Request) (*p2p.Stream, error) {
	req.ProtocolVersion = wire.ProtocolVersion
	frame, err := proto.Marshal(req)
	if err != nil {
		return nil, err
	}
	st, err := host.OpenStream(ctx, to, Protocol)
	if err != nil {
		return nil, fmt.Errorf("open admin stream: %w", err)
	}
	if dl, ok := ctx.Deadline(); ok {
		st.SetDeadline(dl)
	} else {
		st.SetDeadline(time.Now().Add(CallTimeout))
	}
	if err := st.WriteFrame(frame); err != nil {
		st.Reset()
		return nil, fmt.Errorf("send admin request: %w", err)
	}
	return st, nil
}

// readResponse reads the next response of a call. A response that is neither OK nor
// PARTIAL comes back with a *CallError; io.EOF when the member closed the stream between
// responses.
func readResponse(ctx context.Context, st *p2p.Stream) (*adminpb.Response, error) {
	out, err := st.ReadFrame()
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if errors.Is(err, io.EOF) {
			return nil, io.EOF
		}
		return nil, fmt.Errorf("read admin answer: %w", err)
	}
	resp, err := decodeResponse(out)
	if err != nil {
		return nil, err
	}
	if resp.Code != adminpb.Code_OK && resp.Code != adminpb.Code_PARTIAL {
		return resp, &CallError{Code: resp.Code, Message: resp.Error}
	}
	return resp, nil
}

// decodeResponse decodes a response frame and checks its protocol version.
func decodeResponse(frame []byte) (*adminpb.Response, error) {
	var resp adminpb.Response
	if err := proto.Unmarshal(frame, &resp); err != nil {
		return nil, fmt.Errorf("malformed admin answer: %w", err)
	}
	if resp.ProtocolVersion != wire.ProtocolVersion {
		return nil, fmt.Errorf("the member speaks admin protocol version %d, this shardctl speaks %d: use the same shardmesh release", resp.ProtocolVersion, wire.ProtocolVersion)
	}
	return &resp, nil
}

// Call makes one request to member to over host and reads its one response: how a member's
// admin server asks the others, and what Client does over its own host.
func Call(ctx context.Context, host *p2p.Host, to peer.ID, req *adminpb.Request) (*adminpb.Response, error) {
	st, err := openCall(ctx, host, to, req)
	if err != nil {
		return nil, err
	}
	defer st.Close()
	resp, err := readResponse(ctx, st)
	if errors.Is(err, io.EOF) {
		return nil, errors.New("the member closed the admin stream without answering")
	}
	return resp, err
}
