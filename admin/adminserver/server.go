package adminserver

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
	"google.golang.org/protobuf/proto"

	"github.com/shardmesh/shardmesh/admin"
	"github.com/shardmesh/shardmesh/admin/adminpb"
	"github.com/shardmesh/shardmesh/p2p"
	"github.com/shardmesh/shardmesh/trust"
	"github.com/shardmesh/shardmesh/wire"
)

const (
	// writeTimeout bounds each response of a streaming call: a caller that stops reading
	// is cut off.
	writeTimeout = 10 * time.Second
	// askTimeout is the default bound of an admin ask and of local queries.
	askTimeout = 10 * time.Second
	// defaultQueryTimeout is shard-region-query-timeout's default.
	defaultQueryTimeout = 3 * time.Second
)

// Config configures the admin server of a member.
type Config struct {
	// Admins are the peer ids of admin identities allowed to change the cluster
	// (admin-allow): their signed requests are carried out.
	Admins []peer.ID
	// Authorities are the cluster authorities (cluster-authority): identities presenting an
	// admin credential from one of them are admins too.
	Authorities []peer.ID
	// ReadOnlyOpen answers calls that only read, and messages to entities, to any peer that
	// reaches the member (admin-read-only-open); off, only to admins and members.
	ReadOnlyOpen bool
	// QueryTimeout bounds each member's answer to stats and locate
	// (shard-region-query-timeout). Default 3 s.
	QueryTimeout time.Duration
	// Logger receives refusals and admin operations; default slog.Default().
	Logger *slog.Logger
	// Metrics, when set, counts and times the calls (NewMetrics). Nil: not recorded.
	Metrics *Metrics
}

// Server serves the admin protocol of one member.
type Server struct {
	backend Backend
	cfg     Config
	self    peer.ID
	policy  *trust.Policy
	log     *slog.Logger

	replayMu   sync.Mutex
	replay     *trust.ReplayGuard
	audit      auditLog
	followWait time.Duration // how long a directive change waits for the members to follow it
	// callPeer makes a call to another member's admin server.
	callPeer func(ctx context.Context, to peer.ID, req *adminpb.Request) (*adminpb.Response, error)

	ready readyRegions

	quit     chan struct{}
	quitOnce sync.Once
	// calls counts the calls in progress; once Close has begun, drained is closed when it
	// reaches zero. Calls arriving meanwhile are still answered (the member has stopped: they
	// hear so) and waited for. (A WaitGroup would panic: added to from zero while waited on.)
	callsMu     sync.Mutex
	calls       int
	drained     chan struct{} // nil until Close
	drainedDone bool          // drained is closed
}

// NewServer returns a server answering from backend, without a host: Serve puts it on one.
func NewServer(backend Backend, cfg Config) *Server {
	if cfg.QueryTimeout <= 0 {
		cfg.QueryTimeout = defaultQueryTimeout
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	self, _ := peer.Decode(backend.Self())
	s := &Server{backend: backend, cfg: cfg, self: self, policy: trust.NewPolicy(cfg.Authorities, cfg.Admins), log: cfg.Logger,
		replay: trust.NewReplayGuard(0), followWait: defaultFollowWait, quit: make(chan struct{})}
	s.callPeer = func(context.Context, peer.ID, *adminpb.Request) (*adminpb.Response, error) {
		return nil, fmt.Errorf("no host to reach other members")
	}
	return s
}

// Serve starts answering admin calls on host.
func Serve(host *p2p.Host, backend Backend, cfg Config) *Server {
	s := NewServer(backend, cfg)
	s.callPeer = func(ctx context.Context, to peer.ID, req *adminpb.Request) (*adminpb.Response, error) {
		return admin.Call(ctx, host, to, req)
	}
	host.HandleStream(admin.Protocol, s.handle)
	return s
}

// Close ends the streaming calls (watch, shutdown progress) with a last response and waits
// for every call in progress to finish, or ctx. A daemon calls it after its member stopped
// and before it closes the host, so a shutdown's caller hears that the member left.
func (s *Server) Close(ctx context.Context) {
	s.quitOnce.Do(func() { close(s.quit) })
	s.callsMu.Lock()
	if s.drained == nil {
		s.drained = make(chan struct{})
		s.checkDrained()
	}
	done := s.drained
	s.callsMu.Unlock()
	select {
	case <-done:
	case <-ctx.Done():
	}
}

// enter and leave count a call in and out.
func (s *Server) enter() {
	s.callsMu.Lock()
	s.calls++
	s.callsMu.Unlock()
}

func (s *Server) leave() {
	s.callsMu.Lock()
	s.calls--
	s.checkDrained()
	s.callsMu.Unlock()
}

// checkDrained closes drained when Close has begun and no call is in progress (callsMu held).
func (s *Server) checkDrained() {
	if s.drained != nil && s.calls == 0 && !s.drainedDone {
		close(s.drained)
		s.drainedDone = true
	}
}

// emitter sends one response of a call.
type emitter func(*adminpb.Response) error

func (s *Server) handle(st *p2p.Stream) {
	s.enter()
	defer s.leave()
	st.SetDeadline(time.Now().Add(admin.CallTimeout))
	caller := st.RemotePeer()
	frame, err := st.ReadFrame()
	if err != nil {
		s.log.Debug("admin call: no request", "caller", caller, "err", err)
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	emit := func(resp *adminpb.Response) error {
		resp.ProtocolVersion = wire.ProtocolVersion
		out, err := proto.Marshal(resp)
		if err != nil {
			return err
		}
		if err := st.SetWriteDeadline(time.Now().Add(writeTimeout)); err != nil {
			return err
		}
		return st.WriteFrame(out)
	}
	started := func() {
		// A streaming call: no read deadline any more, and the caller closing its end
		// ends the call.
		_ = st.SetReadDeadline(time.Time{})
		go func() {
			_, _ = st.ReadFrame()
			cancel()
		}()
	}
	if err := s.serve(ctx, caller, frame, emit, started); err != nil {
		s.log.Debug("admin call: answer not delivered", "caller", caller, "err", err)
	}
}

// serve answers one request frame from peer from. streaming is called once a call turns out
// to answer with a stream of responses.
func (s *Server) serve(ctx context.Context, from peer.ID, frame []byte, emit emitter, streaming func()) error {
	start := time.Now()
	c := caller{peer: from}
	req, err := admin.DecodeRequest(frame)
	var bad *adminpb.Response
	if err != nil {
		bad = refuse(adminpb.Code_BAD_REQUEST, "%v", err)
	} else if len(req.Signed) > 0 {
		var inner *adminpb.Request
		if c.admin, inner, bad = s.openSigned(req.Signed); bad == nil {
			req = inner
		} else {
			s.log.Warn("admin call refused", "peer", from.String(), "reason", bad.Error)
			defer s.audit.refusal(s, req.Signed, bad) // after the answer
		}
	}
	// The call's last response: what the metrics count and the audit records.
	var last *adminpb.Response
	inner := emit
	emit = func(resp *adminpb.Response) error {
		last = resp
		return inner(resp)
	}
	name, acc := "malformed", admin.AccessRead
	if bad == nil {
		name, acc = admin.CallInfo(req)
	}
	if s.cfg.Metrics != nil {
		defer func() { s.cfg.Metrics.record(name, last.GetCode(), time.Since(start)) }()
	}
	if bad != nil {
		return emit(bad)
	}
	if refused := s.authorize(c, req); refused != nil {
		if c.admin != nil {
			defer s.audit.refusal(s, c.admin.Raw, refused) // after the answer
		}
		return emit(refused)
	}
	// Calls that change the cluster are audited; a down --check or a dry run changes
	// nothing (the dashboard checks at every connection whether its identity is an admin).
	audited := acc == admin.AccessAdmin && !req.GetDown().GetCheck() && !req.GetDataRemove().GetDryRun()
	if audited {
		defer func() {
			if audited {
				s.took(c, name, req, last, start)
			}
		}()
	}
	switch call := req.Call.(type) {
	case *adminpb.Request_Watch:
		streaming()
		return s.watch(ctx, call.Watch, emit)
	case *adminpb.Request_Shutdown:
		if audited { // recorded as it begins: it ends with the member, and its store, gone
			s.took(c, name, req, &adminpb.Response{}, start)
			audited = false
		}
		if call.Shutdown.Follow {
			streaming()
		}
		return s.shutdown(ctx, call.Shutdown, emit)
	case *adminpb.Request_DataRemove:
		streaming()
		return s.dataRemove(ctx, call.DataRemove, c.admin.Raw, emit)
	case *adminpb.Request_Directive:
		return emit(s.directive(ctx, call.Directive, c.admin.Raw))
	}
	return emit(s.answer(ctx, req))
}

// answer answers a call that has one response.
func (s *Server) answer(ctx context.Context, req *adminpb.Request) *adminpb.Response {
	switch call := req.Call.(type) {
	case *adminpb.Request_Members:
		return &adminpb.Response{Result: &adminpb.Response_Members{Members: s.backend.Members()}}
	case *adminpb.Request_Types:
		return &adminpb.Response{Result: &adminpb.Response_Types{Types: &adminpb.TypesResponse{Names: s.backend.Types()}}}
	case *adminpb.Request_Tell:
		t := call.Tell
		if err := s.backend.Tell(t.EntityType, t.Entity, t.Payload); err != nil {
			return callError(err)
		}
		return &adminpb.Response{}
	case *adminpb.Request_Ask:
		a := call.Ask
		timeout := askTimeout
		if a.TimeoutMs > 0 {
			if a.TimeoutMs > uint64(admin.MaxAskTimeout.Milliseconds()) {
				return refuse(adminpb.Code_BAD_REQUEST, "ask timeout %v: at most %v", time.Duration(a.TimeoutMs)*time.Millisecond, admin.MaxAskTimeout)
			}
			timeout = time.Duration(a.TimeoutMs) * time.Millisecond
		}
		ctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		reply, err := s.backend.Ask(ctx, a.EntityType, a.Entity, a.Payload)
		if err != nil {
			return callError(err)
		}
		return &adminpb.Response{Result: &adminpb.Response_Ask{Ask: &adminpb.AskResponse{Payload: reply}}}
	case *adminpb.Request_RegionState:
		return s.regionState(ctx, call.RegionState)
	case *adminpb.Request_LocalStats:
		ctx, cancel := context.WithTimeout(ctx, askTimeout)
		defer cancel()
		st, err := s.backend.LocalStats(ctx, call.LocalStats.EntityTypes, call.LocalStats.WithAllocations)
		if err != nil {
			return callError(err)
		}
		return &adminpb.Response{Result: &adminpb.Response_LocalStats{LocalStats: st}}
	case *adminpb.Request_Stats:
		return s.stats(ctx, call.Stats)
	case *adminpb.Request_ShardInfo:
		ctx, cancel := context.WithTimeout(ctx, askTimeout)
		defer cancel()
		si := call.ShardInfo
		info, err := s.backend.ShardInfo(ctx, si.EntityType, si.Shard, si.Entity)
		if err != nil {
			return callError(err)
		}
		return &adminpb.Response{Result: &adminpb.Response_ShardInfo{ShardInfo: info}}
	case *adminpb.Request_Locate:
		return s.locate(ctx, call.Locate)
	case *adminpb.Request_Health:
		return s.health(ctx)
	case *adminpb.Request_Down:
		return s.down(ctx, call.Down)
	case *adminpb.Request_Directives:
		return s.directives(ctx)
	case *adminpb.Request_Plan:
		return s.plan(ctx, call.Plan)
	case *adminpb.Request_Handoffs:
		return s.handoffs(ctx, call.Handoffs)
	case *adminpb.Request_LocalHandoffs:
		return s.localHandoffs(ctx, call.LocalHandoffs)
	case *adminpb.Request_History:
		return s.history(ctx, call.History)
	case *adminpb.Request_StoreStatus:
		return s.storeStatus(ctx, call.StoreStatus)
	case *adminpb.Request_LocalStoreStatus:
		return s.localStoreStatus(call.LocalStoreStatus)
	case *adminpb.Request_DataRemoveCheck:
		return s.dataRemoveCheck(ctx, call.DataRemoveCheck)
	case *adminpb.Request_Audit:
		return s.auditRecords(ctx, call.Audit)
	case *adminpb.Request_Reminders:
		return s.reminders(ctx, call.Reminders)
	}
	return refuse(adminpb.Code_BAD_REQUEST, "unknown admin call %T: is shardctl newer than this member?", req.Call)
}

// ask makes a call to member to: answered here when to is this member.
func (s *Server) ask(ctx context.Context, to string, req *adminpb.Request) (*adminpb.Response, error) {
	if to == s.backend.Self() {
		resp := s.answer(ctx, req)
		if resp.Code != adminpb.Code_OK && resp.Code != adminpb.Code_PARTIAL {
			return resp, &admin.CallError{Code: resp.Code, Message: resp.Error}
		}
		return resp, nil
	}
	id, err := peer.Decode(to)
	if err != nil {
		return nil, fmt.Errorf("member %q has no valid peer id", to)
	}
	return s.callPeer(ctx, id, req)
}

// regionStateBudget bounds the entity ids listed in one region-state answer, well below
// the maximum frame size; entity counts stay exact beyond it.
const regionStateBudget = 3 << 20

func (s *Server) regionState(ctx context.Context, req *adminpb.RegionStateRequest) *adminpb.Response {
	ctx, cancel := context.WithTimeout(ctx, askTimeout)
	defer cancel()
	st, err := s.backend.RegionState(ctx, req.EntityType)
	if err != nil {
		return callError(err)
	}
	budget := regionStateBudget
	for _, sh := range st.Shards {
		for i, e := range sh.Entities {
			budget -= len(e) + 4
			if budget < 0 {
				sh.Entities = sh.Entities[:i]
				st.Truncated = true
				break
			}
		}
	}
	return &adminpb.Response{Result: &adminpb.Response_RegionState{RegionState: st}}
}

func refuse(code adminpb.Code, format string, args ...any) *adminpb.Response {
	return &adminpb.Response{Code: code, Error: fmt.Sprintf(format, args...)}
}
