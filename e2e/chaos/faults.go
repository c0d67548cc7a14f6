package chaos

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/shardmesh/shardmesh/admin/adminpb"
)

// Fault kinds, as named in Config.Faults and in the timeline.
const (
	FaultKill      = "kill"      // kill -9, restart after a while
	FaultPause     = "pause"     // SIGSTOP, SIGCONT after a while
	FaultTerm      = "term"      // SIGTERM (graceful leave), restart after a while
	FaultShutdown  = "shutdown"  // the admin shutdown call (shardctl shutdown), restart after a while
	FaultJoin      = "join"      // a new member joins
	FaultPartition = "partition" // a minority is cut off from the rest, healed after a while
)

// AllFaults lists every fault kind.
var AllFaults = []string{FaultKill, FaultPause, FaultTerm, FaultShutdown, FaultJoin, FaultPartition}

// timeline records what the driver did, stamped with the time since the run started.
type timeline struct {
	start time.Time
	mu    sync.Mutex
	lines []string
	logf  func(string, ...any)
}

func (t *timeline) add(format string, args ...any) {
	line := fmt.Sprintf("%8.2fs  ", time.Since(t.start).Seconds()) + fmt.Sprintf(format, args...)
	t.mu.Lock()
	t.lines = append(t.lines, line)
	t.mu.Unlock()
	if t.logf != nil {
		t.logf("%s", line)
	}
}

func (t *timeline) all() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return slices.Clone(t.lines)
}

// pause is a SIGSTOP..SIGCONT (or exit) interval of one process.
type pause struct {
	pid        int
	from, till int64 // CLOCK_MONOTONIC ns; till 0 while it lasts
}

// injector carries out faults on the cluster.
type injector struct {
	c      *cluster
	tl     *timeline
	rng    *rand.Rand
	faults []string

	mu     sync.Mutex
	pauses []pause
}

// between returns a random duration in [lo, hi).
func (in *injector) between(lo, hi time.Duration) time.Duration {
	return lo + time.Duration(in.rng.Int64N(int64(hi-lo)))
}

// step injects one random fault and undoes it, restarting what went down.
func (in *injector) step() {
	kind := in.faults[in.rng.IntN(len(in.faults))]
	live := in.c.liveMembers()
	if len(live) < 2 {
		in.tl.add("skip %s: fewer than 2 live members", kind)
		return
	}
	victim := live[in.rng.IntN(len(live))]
	switch kind {
	case FaultKill:
		victim.kill()
		in.tl.add("kill -9 %s", victim.name)
		in.sleep(in.between(time.Second, 6*time.Second))
	case FaultPause:
		d := in.between(500*time.Millisecond, 8*time.Second)
		p := victim.current()
		victim.signal(syscall.SIGSTOP)
		in.mu.Lock()
		in.pauses = append(in.pauses, pause{pid: p.pid, from: monoNow()})
		in.mu.Unlock()
		in.tl.add("SIGSTOP %s for %v", victim.name, d.Round(time.Millisecond))
		in.sleep(d)
		in.cont(victim)
	case FaultTerm:
		victim.signal(syscall.SIGTERM)
		in.tl.add("SIGTERM %s", victim.name)
		in.awaitExit(victim, 90*time.Second)
		in.sleep(in.between(500*time.Millisecond, 4*time.Second))
	case FaultShutdown:
		cl := victim.adminClient()
		in.tl.add("shutdown %s (admin call)", victim.name)
		ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
		last, err := cl.Shutdown(ctx, func(*adminpb.ShutdownProgress) {})
		cancel()
		if err != nil {
			in.tl.add("shutdown %s: %v (last phase %s)", victim.name, err, last.GetPhase())
		} else {
			in.tl.add("shutdown %s: phase %s after %dms", victim.name, last.GetPhase(), last.GetElapsedMs())
		}
		in.awaitExit(victim, 10*time.Second)
		in.sleep(in.between(500*time.Millisecond, 4*time.Second))
	case FaultJoin:
		m, err := in.c.addMember()
		if err != nil {
			in.tl.add("skip join: %v", err)
			return
		}
		in.tl.add("join %s", m.name)
		if err := in.c.start(m, in.c.joinAddrs(m)); err != nil {
			in.tl.add("join %s failed: %v", m.name, err)
		}
	case FaultPartition:
		n := 1 + in.rng.IntN(max(1, (len(live)-1)/2))
		perm := in.rng.Perm(len(live))
		var a, b []int
		var an, bn []string
		for i, j := range perm {
			if i < n {
				a, an = append(a, live[j].slot), append(an, live[j].name)
			} else {
				b, bn = append(b, live[j].slot), append(bn, live[j].name)
			}
		}
		d := in.between(2*time.Second, 10*time.Second)
		if err := in.c.net.partition(a, b); err != nil {
			in.tl.add("partition failed: %v", err)
			_ = in.c.net.heal()
			return
		}
		in.tl.add("partition {%s} | {%s} for %v", strings.Join(an, ","), strings.Join(bn, ","), d.Round(time.Millisecond))
		in.sleep(d)
		if err := in.c.net.heal(); err != nil {
			in.tl.add("heal failed: %v", err)
		}
		in.tl.add("heal")
	default:
		panic("unknown fault kind " + kind)
	}
	in.restartDown()
}

func (in *injector) sleep(d time.Duration) { time.Sleep(d) }

// cont resumes a paused member and closes its pause interval.
func (in *injector) cont(m *member) {
	m.signal(syscall.SIGCONT)
	now := monoNow()
	in.mu.Lock()
	for i := range in.pauses {
		if in.pauses[i].till == 0 {
			in.pauses[i].till = now
		}
	}
	in.mu.Unlock()
	in.tl.add("SIGCONT %s", m.name)
}

func (in *injector) awaitExit(m *member, timeout time.Duration) {
	start := time.Now()
	code, ok := m.wait(timeout)
	if !ok {
		in.tl.add("%s did not exit within %v: kill -9", m.name, timeout)
		m.kill()
		return
	}
	in.tl.add("%s exited with code %d after %v", m.name, code, time.Since(start).Round(time.Millisecond))
}

// restartDown starts every member whose process is gone (killed, left, or stopped by the
// cluster: exit code 3 after being downed, or when its rejoin was refused because its old
// incarnation was not removed yet), as a supervisor would.
func (in *injector) restartDown() {
	for _, m := range in.c.members {
		if m.live() {
			continue
		}
		if p := m.current(); p != nil {
			select {
			case <-p.exited:
				if p.exitCode > 0 {
					in.tl.add("%s had exited with code %d", m.name, p.exitCode)
				}
			default:
			}
		}
		if err := in.c.start(m, in.c.joinAddrs(m)); err != nil {
			in.tl.add("restart %s failed: %v", m.name, err)
			continue
		}
		in.tl.add("restart %s", m.name)
	}
}

// superviseEvery runs restartDown every period until the returned stop is called (stop
// waits for a restart under way).
func (in *injector) superviseEvery(period time.Duration) (stop func()) {
	done, exited := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(exited)
		t := time.NewTicker(period)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				in.restartDown()
			}
		}
	}()
	return func() { close(done); <-exited }
}

// closedPauses returns the pause intervals, those still open closed at now.
func (in *injector) closedPauses() []pause {
	in.mu.Lock()
	defer in.mu.Unlock()
	out := slices.Clone(in.pauses)
	now := monoNow()
	for i := range out {
		if out[i].till == 0 {
			out[i].till = now
		}
	}
	return out
}
