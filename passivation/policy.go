package passivation

import (
	"errors"
	"time"

	"github.com/shardmesh/shardmesh/shard"
)

// Hasher maps a key to the 32-bit hash the frequency sketch counts. It must be a pure
// function; a weak hash is fine (it is mixed again), but equal hashes are counted as one key.
type Hasher[K comparable] func(K) uint32

// StringHash is Java's String.hashCode, which Akka's frequency sketch counts: with it, the
// default Window-TinyLFU strategy makes the same decisions as Akka's for the same ids.
func StringHash[K ~string](k K) uint32 {
	var h uint32
	for i := 0; i < len(k); i++ {
		c := k[i]
		if c >= 0x80 { // not ASCII: decode to UTF-16 code units as Java does
			return uint32(shard.JavaStringHashCode(string(k)))
		}
		h = 31*h + uint32(c)
	}
	return h
}

// ErrNoHasher is returned when a strategy with a frequency-sketch admission filter is built
// without a Hasher.
var ErrNoHasher = errors.New("passivation: the frequency-sketch admission filter needs a Hasher")

// Policy is the passivation state machine of one shard: it tracks the shard's active
// entities and decides which of them to passivate, by idle timeout, by active-entity limit
// with a replacement policy, or by both. It is generic over the key so that simulations can
// use cheap keys; a shard uses Policy[shard.EntityID].
//
// The shard calls Access for every message routed to one of its entities (including the one
// that activates it), Remove when an entity stops for any other reason, SetLimit when the
// region hands it a new share of the limit, and Sweep every Interval. The methods that
// may passivate append the entities to passivate to a caller's buffer and return it, so the
// hot path allocates nothing; the policy has already forgotten those entities when they are
// returned. A Policy is not safe for concurrent use.
type Policy[K comparable] struct {
	enabled  bool
	idle     time.Duration // idle timeout, 0 when off
	interval time.Duration // how often to sweep, 0 when off
	limited  bool

	index map[K]int32
	keys  []K
	arena *arena
	hash  Hasher[K]

	origin    time.Time
	hasOrigin bool
	idleList  idleList // least recently accessed first, with a limit
	recency   list     // least recently accessed first, without a limit

	// Limit-based and composite strategies.
	limit       int  // per-shard limit
	window      area // nil without an admission window
	main        area // the active entities of a limit-based strategy, or the main area
	windowLimit int  // the composite's view of the limits, as in Akka
	mainLimit   int  //
	proportion  float64
	minProp     float64
	maxProp     float64
	climber     *hillClimber // nil without an optimizer
	sketch      *frequencySketch
	sketchConf  SketchSettings
	scratch     []int32 // entries unlinked by an area, reused
	moved       []int32 // entries moved between areas, reused
}

// NewPolicy returns the policy of one shard for the given settings, starting with the
// whole per-region limit as its share (as a region with one active shard). hash is needed
// only with a frequency-sketch admission filter; use StringHash for string-like keys.
func NewPolicy[K comparable](s Settings, hash Hasher[K]) (*Policy[K], error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	if s.LimitEnabled() && s.Admission.Filter.Filter == FrequencySketch && hash == nil {
		return nil, ErrNoHasher
	}
	return newPolicy(s, hash, s.ActiveEntityLimit), nil
}

// newPolicy builds a policy from valid settings, with the given share of the limit.
func newPolicy[K comparable](s Settings, hash Hasher[K], share int) *Policy[K] {
	p := &Policy[K]{
		enabled:  s.Enabled(),
		idle:     s.Idle.Timeout,
		interval: s.Idle.CheckInterval(),
		index:    make(map[K]int32),
		arena:    newArena(),
		hash:     hash,
		idleList: newIdleList(),
		recency:  newList(),
	}
	if !s.LimitEnabled() {
		return p
	}
	p.limited = true
	p.limit = share
	adm := s.Admission
	if adm.Enabled() {
		if adm.Window.Policy.Policy != NoPolicy {
			p.proportion = adm.Window.Proportion
			p.minProp = adm.Window.MinimumProportion
			p.maxProp = adm.Window.MaximumProportion
			if adm.Window.Optimizer == HillClimbing {
				p.climber = newHillClimber(adm.Window.HillClimbing, p.limit)
			}
		}
		if adm.Filter.Filter == FrequencySketch {
			p.sketchConf = adm.Filter.Sketch
			p.sketch = newFrequencySketch(p.limit, p.sketchConf)
		}
	}
	p.divide()
	if adm.Window.Policy.Policy != NoPolicy {
		p.window = newArea(p.arena, adm.Window.Policy, p.windowLimit)
	}
	p.main = newArea(p.arena, s.Replacement, p.mainLimit)
	return p
}

// divide splits the per-shard limit between the window (rounding down) and the main area.
func (p *Policy[K]) divide() {
	p.windowLimit = int(p.proportion * float64(p.limit))
	p.mainLimit = p.limit - p.windowLimit
}

// Access records a message routed to entity id at time now, activating the entity if it was
// not active, and appends to out the entities to passivate because the shard's share of the
// active-entity limit is exceeded. It may return id itself: a newly activated entity that
// the admission filter turns away is passivated after this message. It never allocates when
// id is already active.
func (p *Policy[K]) Access(id K, now time.Time, out []K) []K {
	if !p.enabled {
		return out
	}
	var h uint32
	if p.sketch != nil {
		h = p.hash(id)
		p.sketch.increment(h)
	}
	i, active := p.index[id]
	if active {
		if p.idle > 0 {
			p.idleTouch(i, p.since(now))
		}
		switch p.arena.entries[i].where {
		case inWindow:
			p.record(true)
			p.window.touch(i)
		case inMain:
			p.record(true)
			p.main.touch(i)
		default:
			return out
		}
		if p.climber != nil && p.climber.due() {
			out = p.adaptWindow(out)
		}
		return out
	}
	i = p.arena.alloc()
	p.index[id] = i
	if int(i) == len(p.keys) {
		p.keys = append(p.keys, id)
	} else {
		p.keys[i] = id
	}
	p.arena.cold[i].hash = h
	if p.idle > 0 {
		p.idleAdd(i, p.since(now))
	}
	if !p.limited {
		return out
	}
	p.record(false)
	if p.window != nil {
		p.arena.entries[i].where = inWindow
		p.scratch = p.window.add(i, p.scratch[:0])
		out = p.admit(p.scratch, out)
	} else {
		out = p.admitOne(i, out)
	}
	return p.adaptWindow(out)
}

// Remove forgets entity id, which stopped for a reason of its own (it passivated itself,
// failed, or its shard is handing off). Unknown ids are ignored.
func (p *Policy[K]) Remove(id K) {
	i, ok := p.index[id]
	if !ok {
		return
	}
	p.unlink(i)
	p.forget(i)
}

// SetLimit gives the shard a new share of the region's active-entity limit, appending to
// out the entities to passivate when the share shrank. Setting the current share again
// changes nothing. Policies without an active-entity limit ignore it.
func (p *Policy[K]) SetLimit(limit int, out []K) []K {
	if !p.limited || limit == p.limit {
		return out
	}
	p.limit = max(limit, 0)
	p.divide()
	if p.climber != nil {
		p.climber.setLimit(p.limit)
	}
	if p.sketch != nil {
		p.sketch = newFrequencySketch(p.limit, p.sketchConf)
	}
	if p.window != nil {
		p.scratch = p.window.setLimit(p.windowLimit, p.scratch[:0])
		out = p.admit(p.scratch, out)
	}
	p.scratch = p.main.setLimit(p.mainLimit, p.scratch[:0])
	return p.passivate(p.scratch, out)
}

// Sweep appends to out the entities that have received no message for longer than the idle
// timeout at time now, and forgets them. It does nothing when idle passivation is off.
func (p *Policy[K]) Sweep(now time.Time, out []K) []K {
	if p.idle <= 0 || !p.hasOrigin {
		return out
	}
	oldest := p.since(now) - int64(p.idle)
	for i := p.idleOldest(); i != none && p.arena.entries[i].seen < oldest; i = p.idleOldest() {
		out = append(out, p.keys[i])
		p.unlink(i)
		p.forget(i)
	}
	return out
}

// Interval returns how often the shard should call Sweep, or 0 when idle passivation is off.
func (p *Policy[K]) Interval() time.Duration { return p.interval }

// Resolution returns how far apart two accesses to one entity must be for the policy to
// tell them from one: a caller may skip reporting an access that comes sooner than that
// after the last one it reported for the entity. It is 0 (report every access) when an
// active-entity limit applies, since recency and frequency count every message; with idle
// passivation alone it is a sixteenth of the idle timeout (7.5 s of the default 120 s), well
// inside the sweep's own granularity of Interval.
func (p *Policy[K]) Resolution() time.Duration {
	if p.limited || p.idle <= 0 {
		return 0
	}
	return p.idle / 16
}

// Contains reports whether entity id is tracked as active.
func (p *Policy[K]) Contains(id K) bool {
	_, ok := p.index[id]
	return ok
}

// Len returns the number of entities tracked as active.
func (p *Policy[K]) Len() int { return len(p.index) }

// Limit returns the shard's current share of the active-entity limit, or 0 without a limit.
func (p *Policy[K]) Limit() int { return p.limit }

// WindowProportion returns the admission window's current share of the limit (0 without a
// window); the hill-climbing optimizer moves it.
func (p *Policy[K]) WindowProportion() float64 { return p.proportion }

// since converts now to nanoseconds since the first time the policy saw, using the
// monotonic clock reading when there is one.
func (p *Policy[K]) since(now time.Time) int64 {
	if !p.hasOrigin {
		p.origin, p.hasOrigin = now, true
	}
	return int64(now.Sub(p.origin))
}

func (p *Policy[K]) record(active bool) {
	if p.climber != nil {
		p.climber.record(active)
	}
}

// unlink removes entry i from its area and from the idle list.
func (p *Policy[K]) unlink(i int32) {
	switch p.arena.entries[i].where {
	case inWindow:
		p.window.remove(i)
	case inMain:
		p.main.remove(i)
	}
	if p.idle > 0 {
		p.idleRemove(i)
	}
}

// forget drops entry i, already unlinked from its area, from the index and the arena.
func (p *Policy[K]) forget(i int32) {
	var zero K
	delete(p.index, p.keys[i])
	p.keys[i] = zero
	p.arena.release(i)
}

// passivate forgets the entries an area unlinked and appends their keys to out.
func (p *Policy[K]) passivate(unlinked []int32, out []K) []K {
	for _, i := range unlinked {
		out = append(out, p.keys[i])
		if p.idle > 0 {
			p.idleRemove(i)
		}
		p.forget(i)
	}
	return out
}
