package shard

import (
	"fmt"
	"math"
	"time"
)

// Adaptive configures entity-recovery-strategy = adaptive: remembered entities of shards that
// start (a full-cluster restart, a lost member's shards moving) start as fast as a budget
// allows, and the budget follows the store and the entities instead of a fixed rate. The
// rates are for the whole cluster: each member accrues its share (rate divided by the Up
// members), see RecoveryBudget.
type Adaptive struct {
	// Enabled turns the strategy on (it takes precedence over the constant rate).
	Enabled bool
	// InitialRate is where the budget starts, in entity starts per second for the cluster.
	// Default 1,000/s: slow start doubles it every Interval from there.
	InitialRate float64
	// MaxRate caps the budget (entities per second, cluster-wide). Default 100,000/s.
	MaxRate float64
	// MinRate is the floor the budget never backs off below, so recovery always finishes.
	// Default 20/s.
	MinRate float64
	// TargetLatency is the latency the budget keeps the store rounds and the entity starts
	// under: above it the rate backs off. Default 200 ms (the store times a round out at
	// updating-state-timeout, 5 s by default: far above).
	TargetLatency time.Duration
	// Interval is how often the budget adjusts its rate. Default 250 ms.
	Interval time.Duration
}

func (a Adaptive) withDefaults() Adaptive {
	if a.InitialRate <= 0 {
		a.InitialRate = 1000
	}
	if a.MaxRate <= 0 {
		a.MaxRate = 100_000
	}
	if a.MinRate <= 0 {
		a.MinRate = 20
	}
	a.MaxRate = max(a.MaxRate, a.MinRate)
	a.InitialRate = min(max(a.InitialRate, a.MinRate), a.MaxRate)
	if a.TargetLatency <= 0 {
		a.TargetLatency = 200 * time.Millisecond
	}
	if a.Interval <= 0 {
		a.Interval = 250 * time.Millisecond
	}
	return a
}

// RecoverySample is what the runtime measured since its last sample: the store rounds it
// made (remembered entities and durable state: writes, reads, scans), how long they took in
// total, how many failed (no quorum, a timeout), and the remembered entities that started
// with the total time from StartEntity until their behaviour ran (queueing in the workers
// included, and whatever the behaviour loads when it starts).
type RecoverySample struct {
	StoreOps      int
	StoreTime     time.Duration
	StoreFailures int
	Starts        int
	StartTime     time.Duration
	// InFlight is a gauge, not a count: the entity starts given to the runtime whose
	// behaviour has not run yet, when the sample was taken. The latest sample's wins.
	InFlight int
}

// Add sums two samples (o's InFlight, the later gauge, wins).
func (r RecoverySample) Add(o RecoverySample) RecoverySample {
	return RecoverySample{
		StoreOps: r.StoreOps + o.StoreOps, StoreTime: r.StoreTime + o.StoreTime, StoreFailures: r.StoreFailures + o.StoreFailures,
		Starts: r.Starts + o.Starts, StartTime: r.StartTime + o.StartTime, InFlight: o.InFlight,
	}
}

// RecoveryBudget is the controller of the adaptive recovery strategy: a token bucket whose
// rate is set by AIMD with a slow start, as TCP sets its congestion window.
//
//   - Tokens accrue at rate/members per second (members: the Up members, which recover at
//     the same time after a full restart); a start takes one. The bucket holds at most one
//     Interval's worth, so an idle spell does not turn into a burst.
//   - Starts in flight (given out, behaviour not run yet) are capped at
//     rate/members × TargetLatency, by Little's law what the rate and the target leave in
//     flight: beyond it starts would only queue in the runtime, and the controller would
//     see that queue's latency an interval or more later. With the cap, the budget works
//     like TCP's window: starts go out as earlier ones complete, and the start latency
//     exceeds the target exactly when the rate exceeds what the member can start.
//   - Every Interval the controller looks at what happened in it: the mean latency of the
//     store rounds and the mean latency of entity starts, each against TargetLatency, and
//     the store failures.
//   - A failure, or a mean above the target, is congestion: the rate is multiplied by
//     1/2 (failure) or by target/latency, at least 1/2 (latency: with starts in flight
//     capped as below, the start latency above the capacity grows in proportion to the
//     rate, so this is the rate that would have met the target) — a multiplicative
//     decrease — never below MinRate, and slow start ends. Then the rate holds for as long
//     as the latency just measured (at most 4 intervals): the starts and store rounds that
//     complete meanwhile were queued at the old rate, and cutting again for them would
//     overshoot far below the capacity (a delay-based controller must wait one "round trip"
//     before it judges its last move, as TCP cuts its window once per round trip).
//   - Otherwise, if starts were waiting for tokens (the budget, not the shards, limited the
//     interval), the rate grows: doubled per interval during slow start (from InitialRate to
//     the capacity in a few intervals), by InitialRate per interval after the first
//     congestion (additive increase: probing gently around the capacity found). Capped at
//     MaxRate. With no demand the rate stays; after 20 intervals without any, the next
//     recovery starts over from InitialRate in slow start.
//
// Why this shape: the store is shared by every member, and each member's rounds see the
// latency its load and the others' cause. AIMD controllers sharing one bottleneck converge
// to equal shares of it (Chiu and Jain, 1989) without talking to each other, so per-member
// budgets bound the cluster's load on the store; dividing the accrual by the Up members
// makes the configured rates cluster-wide.
//
// The budget is pure: time and measurements come in as values. Not safe for concurrent use.
type RecoveryBudget struct {
	cfg       Adaptive
	rate      float64 // cluster-wide entity starts per second
	tokens    float64
	last      time.Time // last accrual
	windowEnd time.Time
	slowStart bool
	limited   bool      // the budget refused a start in this interval
	demandAt  time.Time // when starts were last asked for
	holdUntil time.Time // after a back-off: measurements until then still show the backlog from before
	inFlight  int       // the latest RecoverySample.InFlight
	window    RecoverySample
	// Adjustments counts rate changes (for inspection); Decreases those that backed off.
	Adjustments, Decreases int
}

// NewRecoveryBudget returns a budget at cfg's InitialRate.
func NewRecoveryBudget(cfg Adaptive, now time.Time) *RecoveryBudget {
	cfg = cfg.withDefaults()
	return &RecoveryBudget{cfg: cfg, rate: cfg.InitialRate, last: now, windowEnd: now.Add(cfg.Interval), slowStart: true, demandAt: now}
}

// Rate returns the current cluster-wide rate, in entity starts per second.
func (b *RecoveryBudget) Rate() float64 { return b.rate }

// SlowStart reports whether the budget has not met congestion yet.
func (b *RecoveryBudget) SlowStart() bool { return b.slowStart }

// Observe adds measurements; they count in the interval that ends next.
func (b *RecoveryBudget) Observe(s RecoverySample) {
	b.window = b.window.Add(s)
	b.inFlight = s.InFlight
}

// Take grants up to want starts at now, for a member that is one of members recovering
// (at least 1), and returns how many.
func (b *RecoveryBudget) Take(now time.Time, want, members int) int {
	b.adjust(now)
	members = max(members, 1)
	share := b.rate / float64(members)
	if dt := now.Sub(b.last); dt > 0 {
		b.tokens += share * dt.Seconds()
		b.last = now
	}
	b.tokens = min(b.tokens, max(share*b.cfg.Interval.Seconds(), 1))
	if want <= 0 {
		return 0
	}
	if now.Sub(b.demandAt) > idleRestart*b.cfg.Interval {
		// A new recovery after a quiet spell: what the last one learnt may no longer hold
		// (members, disks, load changed). Start over, as TCP does after an idle period.
		b.rate, b.slowStart = b.cfg.InitialRate, true
	}
	b.demandAt = now
	// Little's law: at this rate, starts that take TargetLatency leave rate × TargetLatency
	// in flight. More than that is a queue, whose latency the controller would only see
	// later; so at most that many are out at once (at least one, so a start can always
	// go).
	window := max(int(share*b.cfg.TargetLatency.Seconds()), 1)
	got := min(want, int(math.Floor(b.tokens)), max(window-b.inFlight, 0))
	b.tokens -= float64(got)
	if got < want {
		b.limited = true
	}
	return got
}

// maxHold bounds, in intervals, how long the budget holds its rate after a back-off.
const maxHold = 4

// idleRestart is how many intervals without demand make the next recovery start over at
// InitialRate in slow start.
const idleRestart = 20

// adjust closes every interval that ended by now and sets the rate from it.
func (b *RecoveryBudget) adjust(now time.Time) {
	for !now.Before(b.windowEnd) {
		b.decide()
		b.windowEnd = b.windowEnd.Add(b.cfg.Interval)
		if now.Sub(b.windowEnd) > 10*b.cfg.Interval { // a long gap: skip the empty intervals
			b.windowEnd = now.Add(b.cfg.Interval)
		}
	}
}

func (b *RecoveryBudget) decide() {
	w, target, end := b.window, b.cfg.TargetLatency, b.windowEnd
	b.window = RecoverySample{}
	limited := b.limited
	b.limited = false
	prev := b.rate
	storeLat, startLat := mean(w.StoreTime, w.StoreOps), mean(w.StartTime, w.Starts)
	congested := w.StoreFailures > 0 || storeLat > target || startLat > target
	switch {
	case end.Before(b.holdUntil):
		// Just backed off: what completes now was queued before, at the old rate, so its
		// latency says nothing of the new one. Neither cut again nor grow until it drained.
	case congested:
		factor := 0.5
		if w.StoreFailures == 0 {
			// Above the capacity, latency grows with the rate (the window holds
			// rate × target): scale the rate by target/latency, to where latency would
			// have met the target, but at most halve it.
			factor = max(0.5, float64(target)/float64(max(storeLat, startLat)))
		}
		b.rate = max(b.rate*factor, b.cfg.MinRate)
		b.slowStart = false
		// Hold for as long as the backlog measured takes to drain (the latency seen), at
		// most maxHold intervals.
		b.holdUntil = end.Add(min(max(storeLat, startLat), maxHold*b.cfg.Interval))
	case !limited:
		// Nothing waited for the budget: no evidence that more would be fine.
	case b.slowStart:
		b.rate = min(b.rate*2, b.cfg.MaxRate)
	default:
		b.rate = min(b.rate+b.cfg.InitialRate, b.cfg.MaxRate)
	}
	if b.rate != prev {
		b.Adjustments++
		if b.rate < prev {
			b.Decreases++
		}
	}
}

func mean(total time.Duration, n int) time.Duration {
	if n == 0 {
		return 0
	}
	return total / time.Duration(n)
}

// String describes the budget for logs.
func (b *RecoveryBudget) String() string {
	phase := "additive increase"
	if b.slowStart {
		phase = "slow start"
	}
	return fmt.Sprintf("recovery budget %.0f/s (%s)", b.rate, phase)
}
