package admin

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
	"google.golang.org/protobuf/proto"

	"github.com/shardmesh/shardmesh/admin/adminpb"
	"github.com/shardmesh/shardmesh/p2p"
	"github.com/shardmesh/shardmesh/wire"
)

// Protocol is the admin protocol id.
const Protocol = "/shardmesh/admin/1"

// callTimeout bounds how long the server waits for a request and spends on an answer.
const callTimeout = 30 * time.Second

// Server serves the admin protocol on a host.
type Server struct {
	backend Backend
	admins  map[peer.ID]bool
	log     *slog.Logger
}

// Serve starts answering admin calls on host. admins are the peer ids allowed to make calls
// that change the cluster.
func Serve(host *p2p.Host, backend Backend, admins []peer.ID, log *slog.Logger) *Server {
	s := &Server{backend: backend, admins: map[peer.ID]bool{}, log: log}
	for _, a := range admins {
		s.admins[a] = true
	}
	host.HandleStream(Protocol, s.handle)
	return s
}

func (s *Server) handle(st *p2p.Stream) {
	defer st.Close()
	st.SetDeadline(time.Now().Add(callTimeout))
	caller := st.RemotePeer()
	frame, err := st.ReadFrame()
	if err != nil {
		s.log.Debug("admin call: no request", "caller", caller, "err", err)
		return
	}
	var req adminpb.Request
	resp := s.dispatch(caller, frame, &req)
	resp.ProtocolVersion = wire.ProtocolVersion
	out, err := proto.Marshal(resp)
	if err != nil {
		s.log.Error("admin call: cannot encode the answer", "err", err)
		return
	}
	if err := st.WriteFrame(out); err != nil {
		s.log.Debug("admin call: answer not delivered", "caller", caller, "err", err)
	}
}

func (s *Server) dispatch(_ peer.ID, frame []byte, req *adminpb.Request) *adminpb.Response {
	if err := proto.Unmarshal(frame, req); err != nil {
		return refuse(adminpb.Code_BAD_REQUEST, "malformed admin request: %v", err)
	}
	if req.ProtocolVersion != wire.ProtocolVersion {
		return refuse(adminpb.Code_BAD_REQUEST, "admin protocol version %d is not supported (this member speaks %d)", req.ProtocolVersion, wire.ProtocolVersion)
	}
	switch call := req.Call.(type) {
	case *adminpb.Request_Members:
		return &adminpb.Response{Result: &adminpb.Response_Members{Members: s.backend.Members()}}
	case *adminpb.Request_Types:
		return &adminpb.Response{Result: &adminpb.Response_Types{Types: &adminpb.TypesResponse{Names: s.backend.Types()}}}
	case *adminpb.Request_Tell:
		t := call.Tell
		if t.EntityType == "" || t.Entity == "" {
			return refuse(adminpb.Code_BAD_REQUEST, "tell needs an entity type and an entity id")
		}
		if err := s.backend.Tell(t.EntityType, t.Entity, t.Payload); err != nil {
			return callError(err)
		}
		return &adminpb.Response{}
	case *adminpb.Request_Ask:
		a := call.Ask
		if a.EntityType == "" || a.Entity == "" {
			return refuse(adminpb.Code_BAD_REQUEST, "ask needs an entity type and an entity id")
		}
		timeout := askTimeout
		if a.TimeoutMs > 0 {
			timeout = min(time.Duration(a.TimeoutMs)*time.Millisecond, callTimeout)
		}
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		reply, err := s.backend.Ask(ctx, a.EntityType, a.Entity, a.Payload)
		if err != nil {
			return callError(err)
		}
		return &adminpb.Response{Result: &adminpb.Response_Ask{Ask: &adminpb.AskResponse{Payload: reply}}}
	case *adminpb.Request_RegionState:
		ctx, cancel := context.WithTimeout(context.Background(), askTimeout)
		defer cancel()
		st, err := s.backend.RegionState(ctx, call.RegionState.GetEntityType())
		if err != nil {
			return callError(err)
		}
		return &adminpb.Response{Result: &adminpb.Response_RegionState{RegionState: st}}
	default:
		return refuse(adminpb.Code_BAD_REQUEST, "unknown admin call %T: is shardctl newer than this member?", req.Call)
	}
}

func refuse(code adminpb.Code, format string, args ...any) *adminpb.Response {
	return &adminpb.Response{Code: code, Error: fmt.Sprintf(format, args...)}
}
