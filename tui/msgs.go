package tui

import (
	"time"

	"github.com/shardmesh/shardmesh/admin/adminpb"
)

// Messages: every one that answers a call carries the time the answer arrived, so Update
// never reads the clock.
type (
	// connectedMsg: the entry member answered.
	connectedMsg struct {
		src Source
		at  time.Time
	}
	// connectFailedMsg: the entry member could not be reached.
	connectFailedMsg struct {
		err     error
		at      time.Time
		attempt int
	}
	// retryConnectMsg: time to try connecting again (attempt names the try it belongs to;
	// a late one for an older try is dropped).
	retryConnectMsg struct{ attempt int }
	// tickMsg: time to refresh.
	tickMsg    struct{ at time.Time }
	membersMsg struct {
		resp *adminpb.MembersResponse
		err  error
		at   time.Time
	}
	statsMsg struct {
		resp *adminpb.StatsResponse
		err  error
		at   time.Time
	}
	// handoffsMsg: the answer to handoffs ask seq.
	handoffsMsg struct {
		seq  uint64
		resp *adminpb.HandoffsResponse
		err  error
		at   time.Time
	}
	regionMsg struct {
		node, typ string
		resp      *adminpb.RegionStateResponse
		err       error
		at        time.Time
	}
	// watchStartedMsg: a subscription is live (or being set up).
	watchStartedMsg struct{ sub *subscription }
	// eventsMsg: a batch of events from sub.
	eventsMsg struct {
		sub     *subscription
		events  []*adminpb.WatchEvent
		dropped int64 // events dropped so far because the dashboard fell behind
		at      time.Time
	}
	// watchEndedMsg: sub's stream ended.
	watchEndedMsg struct {
		sub *subscription
		err error
		at  time.Time
	}
	// watchRetryMsg: time to subscribe again.
	watchRetryMsg struct{ gen int }
	// adminMsg: whether the identity may change the cluster.
	adminMsg struct {
		err error
		at  time.Time
	}
	rebalanceMsg struct {
		paused bool
		err    error
		at     time.Time
	}
	// actionDoneMsg: an action was carried out (or refused).
	actionDoneMsg struct {
		action Action
		node   string
		err    error
		at     time.Time
	}
)
