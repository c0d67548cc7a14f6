package adminserver

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"
	"google.golang.org/protobuf/proto"

	"github.com/shardmesh/shardmesh/admin"
	"github.com/shardmesh/shardmesh/admin/adminpb"
	"github.com/shardmesh/shardmesh/node"
	"github.com/shardmesh/shardmesh/trust"
	"github.com/shardmesh/shardmesh/wire"
)

// testKeys holds the private key of every id newID made: a test call from an id signs its
// admin calls with it, as shardctl signs with its identity.
var testKeys sync.Map // peer.ID → crypto.PrivKey

// newID returns a fresh peer id.
func newID(t testing.TB) peer.ID {
	t.Helper()
	priv, pub, err := crypto.GenerateEd25519Key(nil)
	if err != nil {
		t.Fatal(err)
	}
	id, err := peer.IDFromPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	testKeys.Store(id, priv)
	return id
}

// fakeBackend stands in for a member.
type fakeBackend struct {
	self    string
	members *adminpb.MembersResponse
	types   []string
	stats   *adminpb.LocalStatsResponse
	shards  map[string]*adminpb.ShardInfoResponse // by shard
	events  chan node.Event
	done    chan struct{}
	reason  string

	stopped  []string // types out of service here
	draining []string
	paused   bool
	pins     []*adminpb.Pin
	readErr  error // ReadDirectives' error (the store does not answer)

	mu         sync.Mutex
	audit      [][]byte
	downed     []string
	shutdowns  int
	registered bool
	directives int           // ChangeDirective calls
	removals   int           // RemoveTypeData calls
	askWait    time.Duration // how long the last Ask was given
	store      *adminpb.StoreHealth
	storeParts *adminpb.LocalStoreStatusResponse // LocalStoreStatus's answer
	history    *adminpb.HistoryResponse          // History's answer (empty when nil)
}

func newFakeBackend(self string, others ...string) *fakeBackend {
	b := &fakeBackend{self: self, types: []string{"counter"}, shards: map[string]*adminpb.ShardInfoResponse{},
		events: make(chan node.Event, 16), done: make(chan struct{})}
	b.members = &adminpb.MembersResponse{Self: self}
	for _, id := range append([]string{self}, others...) {
		b.members.Members = append(b.members.Members, &adminpb.MemberInfo{Node: id, Status: "Up", Reachable: true})
	}
	b.stats = &adminpb.LocalStatsResponse{Node: self, Status: "Up", Serving: true,
		Regions: []*adminpb.RegionStats{{EntityType: "counter", Registered: true, Shards: []*adminpb.ShardStats{{Shard: "1", Entities: 2}}}}}
	return b
}

func (b *fakeBackend) member(id string) *adminpb.MemberInfo {
	for _, m := range b.members.Members {
		if m.Node == id {
			return m
		}
	}
	return nil
}

func (b *fakeBackend) Self() string                      { return b.self }
func (b *fakeBackend) Members() *adminpb.MembersResponse { return b.members }
func (b *fakeBackend) Types() []string                   { return b.types }
func (b *fakeBackend) Tell(typ, _ string, _ []byte) error {
	if typ != "counter" {
		return node.ErrUnknownType
	}
	return nil
}

func (b *fakeBackend) Ask(ctx context.Context, typ, _ string, p []byte) ([]byte, error) {
	if dl, ok := ctx.Deadline(); ok {
		b.mu.Lock()
		b.askWait = time.Until(dl)
		b.mu.Unlock()
	}
	if typ != "counter" {
		return nil, node.ErrUnknownType
	}
	return p, nil
}

func (b *fakeBackend) RegionState(_ context.Context, typ string) (*adminpb.RegionStateResponse, error) {
	if typ != "counter" {
		return nil, node.ErrUnknownType
	}
	return &adminpb.RegionStateResponse{Node: b.self, EntityType: typ, Shards: []*adminpb.ShardState{{Shard: "1", Entities: []string{"a", "b"}, EntityCount: 2}}}, nil
}

func (b *fakeBackend) LocalStats(context.Context, []string, bool) (*adminpb.LocalStatsResponse, error) {
	select {
	case <-b.done:
		return nil, node.ErrStopped
	default:
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	out := proto.Clone(b.stats).(*adminpb.LocalStatsResponse)
	if b.registered {
		out.Regions[0].Registered = true
	}
	return out, nil
}

func (b *fakeBackend) CheckShard(_, s string) error {
	if s == "bad" {
		return errors.New(`shard "bad": not a shard of this type`)
	}
	return nil
}

func (b *fakeBackend) ShardOf(typ, entity string) (string, error) {
	if typ != "counter" {
		return "", node.ErrUnknownType
	}
	return "s-" + entity, nil
}

func (b *fakeBackend) ShardInfo(_ context.Context, typ, s, _ string) (*adminpb.ShardInfoResponse, error) {
	if typ != "counter" {
		return nil, node.ErrUnknownType
	}
	if info := b.shards[s]; info != nil {
		return proto.Clone(info).(*adminpb.ShardInfoResponse), nil
	}
	return &adminpb.ShardInfoResponse{Node: b.self}, nil
}

func (b *fakeBackend) Ping(context.Context) error { return nil }

func (b *fakeBackend) Subscribe() (<-chan node.Event, func()) { return b.events, func() {} }

func (b *fakeBackend) Shutdown() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.shutdowns++
	return b.shutdowns == 1
}

func (b *fakeBackend) Down(_ context.Context, id string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.member(id) == nil {
		return errors.New("not a member")
	}
	b.downed = append(b.downed, id)
	return nil
}

func (b *fakeBackend) Done() <-chan struct{} { return b.done }
func (b *fakeBackend) StopReason() string    { return b.reason }

func (b *fakeBackend) Store() *adminpb.StoreHealth {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.store == nil {
		return &adminpb.StoreHealth{}
	}
	return b.store
}

func (b *fakeBackend) RecordAudit(_ context.Context, _ time.Time, record []byte) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.audit = append(b.audit, record)
	return nil
}

func (b *fakeBackend) AuditRecords(context.Context) ([][]byte, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.audit), nil
}

func (b *fakeBackend) Warnings() []string { return nil }

// ChangeDirective follows the change at once, as a member whose admin set the signer is in.
func (b *fakeBackend) ChangeDirective(_ context.Context, signed []byte) error {
	s, err := trust.OpenSigned(signed)
	if err != nil {
		return err
	}
	req, err := admin.DecodeSignedBody(s.Body)
	if err != nil {
		return err
	}
	d := req.GetDirective()
	b.mu.Lock()
	defer b.mu.Unlock()
	b.directives++
	switch {
	case d.Kind == "drain" && !d.Undo:
		b.draining = append(b.draining, d.Node)
	case d.Kind == "drain":
		b.draining = slices.DeleteFunc(b.draining, func(n string) bool { return n == d.Node })
	case d.Kind == "pause":
		b.paused = !d.Undo
	case d.Kind == "stop" && !d.Undo:
		b.stopped = append(b.stopped, d.EntityType)
	case d.Kind == "stop":
		b.stopped = slices.DeleteFunc(b.stopped, func(t string) bool { return t == d.EntityType })
	case d.Kind == "pin" && !d.Undo:
		b.pins = append(b.pins, &adminpb.Pin{EntityType: d.EntityType, Shard: d.Shard, Node: d.Node})
	case d.Kind == "pin":
		b.pins = slices.DeleteFunc(b.pins, func(p *adminpb.Pin) bool { return p.EntityType == d.EntityType && p.Shard == d.Shard })
	}
	return nil
}

func (b *fakeBackend) Directives(context.Context) (*adminpb.DirectivesResponse, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return &adminpb.DirectivesResponse{Node: b.self, Known: true, StoppedTypes: slices.Clone(b.stopped), Draining: slices.Clone(b.draining),
		RebalancePaused: b.paused, Pins: slices.Clone(b.pins)}, nil
}

func (b *fakeBackend) ReadDirectives(ctx context.Context) (*adminpb.DirectivesResponse, error) {
	if b.readErr != nil {
		return nil, b.readErr
	}
	return b.Directives(ctx)
}

func (b *fakeBackend) Plan(context.Context, string, int, string) (*adminpb.PlanResponse, error) {
	return &adminpb.PlanResponse{Coordinator: b.self}, nil
}

func (b *fakeBackend) LocalHandoffs(context.Context, []string) (*adminpb.LocalHandoffsResponse, error) {
	return &adminpb.LocalHandoffsResponse{Node: b.self}, nil
}

func (b *fakeBackend) Reminders(context.Context, string, string) ([]node.Reminder, error) {
	return nil, nil
}

func (b *fakeBackend) History(context.Context, *adminpb.HistoryRequest) (*adminpb.HistoryResponse, error) {
	if b.history != nil {
		return b.history, nil
	}
	return &adminpb.HistoryResponse{}, nil
}

func (b *fakeBackend) LocalStoreStatus([]string) *adminpb.LocalStoreStatusResponse {
	if b.storeParts != nil {
		return b.storeParts
	}
	return &adminpb.LocalStoreStatusResponse{Member: &adminpb.MemberStore{Node: b.self}}
}

func (b *fakeBackend) RememberedCounts(context.Context, string) (map[string]uint64, error) {
	return nil, nil
}

func (b *fakeBackend) RemoveTypeData(context.Context, string, node.DataScope, bool, bool, func(int, int)) (int, int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.removals++
	return 0, 0, nil
}

// testServer is a server on a fake backend whose logs go to a buffer.
type testServer struct {
	*Server
	backend *fakeBackend
	logs    *syncBuffer
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func newTestServer(_ testing.TB, b *fakeBackend, cfg Config) *testServer {
	logs := &syncBuffer{}
	cfg.Logger = slog.New(slog.NewTextHandler(logs, nil))
	return &testServer{Server: NewServer(b, cfg), backend: b, logs: logs}
}

// call serves one request from caller and returns the responses it sent. An admin call
// from an id newID made is signed with its key, for this member, as a client signs it.
func (s *testServer) call(t testing.TB, caller peer.ID, req *adminpb.Request) []*adminpb.Response {
	t.Helper()
	if key, ok := testKeys.Load(caller); ok {
		if _, acc := admin.CallInfo(req); acc == admin.AccessAdmin {
			self, err := peer.Decode(s.backend.self)
			if err != nil {
				t.Fatal(err)
			}
			if req, err = admin.SignRequest(req, key.(crypto.PrivKey), nil, self, time.Now()); err != nil {
				t.Fatal(err)
			}
		}
	}
	req.ProtocolVersion = wire.ProtocolVersion
	frame, err := proto.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	return s.callFrame(context.Background(), caller, frame)
}

func (s *testServer) callFrame(ctx context.Context, caller peer.ID, frame []byte) []*adminpb.Response {
	var out []*adminpb.Response
	emit := func(r *adminpb.Response) error {
		out = append(out, r)
		return nil
	}
	_ = s.serve(ctx, caller, frame, emit, func() {})
	return out
}

// one serves a request that has one response and returns it.
func (s *testServer) one(t testing.TB, caller peer.ID, req *adminpb.Request) *adminpb.Response {
	t.Helper()
	out := s.call(t, caller, req)
	if len(out) != 1 {
		t.Fatalf("%d responses, want 1: %v", len(out), out)
	}
	return out[0]
}
