package tui

import (
	"context"
	"errors"

	"github.com/shardmesh/shardmesh/admin/adminpb"
)

// Source is what the dashboard needs from the cluster. Its methods are called from
// commands, concurrently, never from Update. AdminSource is the real one.
type Source interface {
	// Entry returns the peer id of the member the dashboard asks.
	Entry() string
	// Members returns the member list as the entry member sees it.
	Members(ctx context.Context) (*adminpb.MembersResponse, error)
	// Stats returns every member's regions; members that did not answer are in Failed.
	Stats(ctx context.Context) (*adminpb.StatsResponse, error)
	// Handoffs returns every handoff in progress with its phase, buffered messages and
	// what holds it up; members that did not answer are in Failed.
	Handoffs(ctx context.Context) (*adminpb.HandoffsResponse, error)
	// RegionState returns the shards and live entities of type typ on member m.
	RegionState(ctx context.Context, m *adminpb.MemberInfo, typ string) (*adminpb.RegionStateResponse, error)
	// Watch hands fn every event until ctx ends (nil) or the stream breaks (an error).
	Watch(ctx context.Context, fn func(*adminpb.WatchEvent)) error
	// CheckAdmin reports whether the dashboard's identity may change the cluster: nil if
	// so, a refusal (an *admin.CallError with code REFUSED) if not. It changes nothing.
	CheckAdmin(ctx context.Context) error
	// Supported returns nil if the source can carry out action a, or why not.
	Supported(a Action) error
	// Shutdown asks member m to shut down gracefully and returns once it has accepted.
	Shutdown(ctx context.Context, m *adminpb.MemberInfo) error
	// Drain drains member node (drain true) or undrains it.
	Drain(ctx context.Context, node string, drain bool) error
	// RebalancePause pauses (true) or resumes rebalancing and returns whether it is paused.
	RebalancePause(ctx context.Context, paused bool) (bool, error)
	// RebalanceStatus returns whether rebalancing is paused.
	RebalanceStatus(ctx context.Context) (bool, error)
	// Close releases the source's connections.
	Close() error
}

// ErrNotSupported is the reason for an action this daemon (or this shardctl) cannot do.
var ErrNotSupported = errors.New("not supported by this daemon")

// Action is something the dashboard can ask of the cluster.
type Action uint8

// Actions.
const (
	ActionShutdown Action = iota + 1 // graceful shutdown of the selected member
	ActionDrain                      // drain the selected member
	ActionUndrain                    // undrain the selected member
	ActionPause                      // pause rebalancing
	ActionResume                     // resume rebalancing
)

func (a Action) String() string {
	switch a {
	case ActionShutdown:
		return "shutdown"
	case ActionDrain:
		return "drain"
	case ActionUndrain:
		return "undrain"
	case ActionPause:
		return "pause rebalance"
	case ActionResume:
		return "resume rebalance"
	}
	return "unknown action"
}

// actions lists every action in the order the Actions view shows them.
var actions = []Action{ActionShutdown, ActionDrain, ActionUndrain, ActionPause, ActionResume}

// perMember reports whether a acts on the selected member.
func (a Action) perMember() bool {
	return a == ActionShutdown || a == ActionDrain || a == ActionUndrain
}
