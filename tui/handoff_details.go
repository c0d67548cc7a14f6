package tui

import (
	"errors"
	"time"

	"github.com/shardmesh/shardmesh/admin/adminpb"
)

// errNoAnswer is the error of a handoffs call that returned neither an answer nor an error.
var errNoAnswer = errors.New("the member sent no handoffs answer")

// maxNames bounds the straggling entities and waiting regions kept per handoff: the view
// names a few and counts the rest.
const maxNames = 8

// maxFailed bounds the members kept that did not answer the handoffs call.
const maxFailed = 16

// handoffDetail is what the handoffs call tells of one handoff in progress: its exact
// phase, the messages buffered for it and what holds it up. Times are the dashboard's:
// the answer's arrival less the durations the coordinator measured.
type handoffDetail struct {
	key         handoffKey
	from, cause string
	phase       string // begun, stopping-entities, stopped
	coordinator string
	epoch       uint64
	began       time.Time
	buffered    uint64
	waiting     []string // regions not buffering yet (phase begun), at most maxNames
	nWaiting    int
	stragglers  []string // entities that have not stopped, at most maxNames
	nStragglers int
	forceStopAt time.Time // when the stragglers are stopped by force; zero: no stragglers
}

// handoffDetails is the last answer of the handoffs call, less the handoffs the watch
// stream has seen end since.
type handoffDetails struct {
	byKey  map[handoffKey]*handoffDetail
	seq    uint64    // the ask the answer shown belongs to
	at     time.Time // when it arrived; zero: none yet
	failed []*adminpb.FailedMember
	err    error // the last ask failed (byKey is empty then)
	errAt  time.Time
	// ended holds the handoffs the stream saw end while asks were out, with the last ask
	// out then: an answer to that ask or an older one may still list them.
	ended map[handoffKey]uint64
}

func newHandoffDetails() handoffDetails {
	return handoffDetails{byKey: map[handoffKey]*handoffDetail{}, ended: map[handoffKey]uint64{}}
}

// apply takes the answer to ask seq, arrived at `at`. Answers older than the one shown
// are dropped.
func (d *handoffDetails) apply(seq uint64, resp *adminpb.HandoffsResponse, err error, at time.Time) {
	if seq <= d.seq {
		return
	}
	d.seq = seq
	clear(d.byKey)
	if resp == nil {
		if err == nil {
			err = errNoAnswer
		}
		d.err, d.errAt, d.failed = err, at, nil
		d.forgetEnded(seq)
		return
	}
	d.err, d.at = nil, at
	d.failed = resp.GetFailed()[:min(len(resp.GetFailed()), maxFailed)]
	for _, h := range resp.GetHandoffs() {
		if len(d.byKey) >= maxInflight {
			break
		}
		k := handoffKey{h.EntityType, h.Shard}
		if s, ok := d.ended[k]; ok && s >= seq {
			continue // asked before the stream said it ended
		}
		x := &handoffDetail{
			key: k, from: h.From, cause: h.Cause, phase: h.Phase, coordinator: h.Coordinator, epoch: h.Epoch,
			began:    at.Add(-time.Duration(h.ElapsedMs) * time.Millisecond),
			buffered: h.Buffered,
			waiting:  keepSome(h.WaitingRegions), nWaiting: len(h.WaitingRegions),
			stragglers: keepSome(h.Stragglers), nStragglers: len(h.Stragglers),
		}
		if len(h.Stragglers) > 0 {
			x.forceStopAt = at.Add(time.Duration(h.ForceStopInMs) * time.Millisecond)
		}
		d.byKey[k] = x
	}
	d.forgetEnded(seq)
}

// forgetEnded drops the ended handoffs no answer newer than seq can list.
func (d *handoffDetails) forgetEnded(seq uint64) {
	for k, s := range d.ended {
		if s <= seq {
			delete(d.ended, k)
		}
	}
}

// observe follows the watch stream: a handoff that ends (or starts again) loses its
// details at once. out is the last ask sent.
func (d *handoffDetails) observe(ev *adminpb.WatchEvent, out uint64) {
	k := handoffKey{ev.EntityType, ev.Shard}
	switch ev.Kind {
	case "handoff-started":
		if x := d.byKey[k]; x != nil && x.epoch != ev.Epoch {
			delete(d.byKey, k)
		}
	case "handoff-failed", "shard-allocated":
		delete(d.byKey, k)
		if out > d.seq {
			if len(d.ended) >= maxInflight {
				clear(d.ended) // at worst an ended handoff shows until the next answer
			}
			d.ended[k] = out
		}
	}
}

// keepSome copies at most maxNames of names.
func keepSome(names []string) []string {
	if len(names) == 0 {
		return nil
	}
	return append([]string(nil), names[:min(len(names), maxNames)]...)
}
