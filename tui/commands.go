package tui

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/shardmesh/shardmesh/admin/adminpb"
)

// Commands: all of the dashboard's I/O. Each bounds its call by the configured timeout
// (the watch stream excepted) and answers with a typed message.

func (m Model) call() (context.Context, context.CancelFunc) {
	return context.WithTimeout(m.ctx, m.cfg.CallTimeout)
}

func (m Model) connectCmd(attempt int) tea.Cmd {
	return func() tea.Msg {
		ctx, cancel := m.call()
		defer cancel()
		src, err := m.cfg.Connect(ctx)
		if err != nil {
			return connectFailedMsg{err: err, at: m.cfg.Now(), attempt: attempt}
		}
		return connectedMsg{src: src, at: m.cfg.Now()}
	}
}

func (m Model) retryCmd(attempt int, after time.Duration) tea.Cmd {
	return tea.Tick(after, func(time.Time) tea.Msg { return retryConnectMsg{attempt: attempt} })
}

func (m Model) tickCmd() tea.Cmd {
	now := m.cfg.Now
	return tea.Tick(m.cfg.Refresh, func(time.Time) tea.Msg { return tickMsg{at: now()} })
}

func (m Model) membersCmd() tea.Cmd {
	src := m.src
	return func() tea.Msg {
		ctx, cancel := m.call()
		defer cancel()
		resp, err := src.Members(ctx)
		return membersMsg{resp: resp, err: err, at: m.cfg.Now()}
	}
}

func (m Model) statsCmd() tea.Cmd {
	src := m.src
	return func() tea.Msg {
		ctx, cancel := m.call()
		defer cancel()
		resp, err := src.Stats(ctx)
		return statsMsg{resp: resp, err: err, at: m.cfg.Now()}
	}
}

func (m Model) handoffsCmd(seq uint64) tea.Cmd {
	src := m.src
	return func() tea.Msg {
		ctx, cancel := m.call()
		defer cancel()
		resp, err := src.Handoffs(ctx)
		return handoffsMsg{seq: seq, resp: resp, err: err, at: m.cfg.Now()}
	}
}

func (m Model) regionCmd(member *adminpb.MemberInfo, typ string) tea.Cmd {
	src := m.src
	return func() tea.Msg {
		ctx, cancel := m.call()
		defer cancel()
		resp, err := src.RegionState(ctx, member, typ)
		return regionMsg{node: member.GetNode(), typ: typ, resp: resp, err: err, at: m.cfg.Now()}
	}
}

func (m Model) adminCmd() tea.Cmd {
	src := m.src
	return func() tea.Msg {
		ctx, cancel := m.call()
		defer cancel()
		return adminMsg{err: src.CheckAdmin(ctx), at: m.cfg.Now()}
	}
}

func (m Model) rebalanceCmd() tea.Cmd {
	src := m.src
	return func() tea.Msg {
		ctx, cancel := m.call()
		defer cancel()
		paused, err := src.RebalanceStatus(ctx)
		return rebalanceMsg{paused: paused, err: err, at: m.cfg.Now()}
	}
}

func (m Model) actionCmd(a Action, member *adminpb.MemberInfo) tea.Cmd {
	src := m.src
	return func() tea.Msg {
		ctx, cancel := m.call()
		defer cancel()
		var err error
		switch a {
		case ActionShutdown:
			err = src.Shutdown(ctx, member)
		case ActionDrain, ActionUndrain:
			err = src.Drain(ctx, member.GetNode(), a == ActionDrain)
		case ActionPause, ActionResume:
			_, err = src.RebalancePause(ctx, a == ActionPause)
		default:
			err = errors.New("unknown action")
		}
		return actionDoneMsg{action: a, node: member.GetNode(), err: err, at: m.cfg.Now()}
	}
}

// subscription is one watch stream. Its goroutine puts events into ch, dropping them (and
// counting) when the dashboard falls a whole buffer behind, and closes ch when the stream
// ends, after setting err.
type subscription struct {
	gen     int
	ch      chan *adminpb.WatchEvent
	err     error
	dropped atomic.Int64
	cancel  context.CancelFunc
}

// subscriptionBuffer is how many events wait for the dashboard before it drops them.
const subscriptionBuffer = 8192

// maxBatch is the most events one eventsMsg carries (one Update and one View for all).
const maxBatch = 2048

func (m Model) watchCmd(gen int) tea.Cmd {
	src, parent := m.src, m.ctx
	return func() tea.Msg {
		ctx, cancel := context.WithCancel(parent)
		sub := &subscription{gen: gen, ch: make(chan *adminpb.WatchEvent, subscriptionBuffer), cancel: cancel}
		go func() {
			sub.err = src.Watch(ctx, func(ev *adminpb.WatchEvent) {
				select {
				case sub.ch <- ev:
				default:
					sub.dropped.Add(1)
				}
			})
			if sub.err == nil && ctx.Err() == nil {
				sub.err = errors.New("the member ended the event stream")
			}
			close(sub.ch)
		}()
		return watchStartedMsg{sub: sub}
	}
}

// batchWindow is how long a batch of events gathers after its first event: a busy stream
// costs at most 1/batchWindow Updates and Views a second, whatever its rate, and an event
// shows at most this much later.
const batchWindow = time.Second / 30

// waitEventsCmd waits for the next event of sub and returns it with those that follow
// within batchWindow (up to maxBatch). Update re-arms it after each batch.
func (m Model) waitEventsCmd(sub *subscription) tea.Cmd {
	now := m.cfg.Now
	return func() tea.Msg {
		ev, ok := <-sub.ch
		if !ok {
			return watchEndedMsg{sub: sub, err: sub.err, at: now()}
		}
		batch := []*adminpb.WatchEvent{ev}
		window := time.NewTimer(batchWindow)
		defer window.Stop()
		for len(batch) < maxBatch {
			select {
			case ev, ok := <-sub.ch:
				if !ok {
					return eventsMsg{sub: sub, events: batch, dropped: sub.dropped.Load(), at: now()}
				}
				batch = append(batch, ev)
			case <-window.C:
				return eventsMsg{sub: sub, events: batch, dropped: sub.dropped.Load(), at: now()}
			}
		}
		return eventsMsg{sub: sub, events: batch, dropped: sub.dropped.Load(), at: now()}
	}
}

func (m Model) watchRetryCmd(gen int, after time.Duration) tea.Cmd {
	return tea.Tick(after, func(time.Time) tea.Msg { return watchRetryMsg{gen: gen} })
}

// cancelCmd ends a subscription.
func cancelCmd(sub *subscription) tea.Cmd {
	return func() tea.Msg {
		sub.cancel()
		return nil
	}
}

// closeCmd releases a source.
func closeCmd(src Source) tea.Cmd {
	return func() tea.Msg {
		_ = src.Close()
		return nil
	}
}
