package passivation

import (
	"fmt"
	"math"
	"strings"
	"time"
)

// Settings is one resolved automatic passivation strategy: the `passivation` block of
// reference.conf after the selected strategy block has been merged over
// `strategy-defaults`. The zero value disables passivation. Build it with [Parse],
// [DefaultSettings], [DefaultStrategy] or [Disabled], or as a literal checked by
// [Settings.Validate]. As in Akka, an entity type that remembers its entities should not
// be passivated automatically: use Disabled for it.
type Settings struct {
	// Strategy names the strategy block the settings came from ("default-idle-strategy",
	// "default-strategy", a user-named block, or "none"). Informational only.
	Strategy string
	// Idle passivates entities that have received no message for a while. Key
	// `idle-entity`; off by default except in `default-idle-strategy` (120 s).
	Idle IdleSettings
	// ActiveEntityLimit is the number of active entities a shard region may hold, divided
	// evenly among its active shards; 0 means no limit. Key `active-entity-limit`; none by
	// default, 100,000 in `default-strategy`. A limit without a Replacement policy is ignored.
	ActiveEntityLimit int
	// Replacement chooses whom to passivate when the limit is reached (the main area of a
	// composite strategy). Key `replacement`; none by default.
	Replacement PolicySettings
	// Admission adds the admission window and admission filter of a composite strategy
	// (Window-TinyLFU). Key `admission`; off by default.
	Admission AdmissionSettings
}

// IdleSettings configures idle-entity passivation.
type IdleSettings struct {
	// Timeout passivates an entity once it has received no message for this long; 0
	// disables idle passivation. Key `idle-entity.timeout`; none by default, 120 s in
	// `default-idle-strategy`.
	Timeout time.Duration
	// Interval is how often the shard should look for idle entities; 0 means half the
	// Timeout. Key `idle-entity.interval`; "default" by default.
	Interval time.Duration
}

// CheckInterval returns how often to call [Policy.Sweep]: Interval, or half the Timeout
// when Interval is 0; 0 when idle passivation is off.
func (s IdleSettings) CheckInterval() time.Duration {
	if s.Timeout <= 0 {
		return 0
	}
	if s.Interval > 0 {
		return s.Interval
	}
	return s.Timeout / 2
}

// ReplacementPolicy names a replacement policy.
type ReplacementPolicy uint8

// The replacement policies; the config spells them "least-recently-used",
// "most-recently-used" and "least-frequently-used", and "none"/"off" for NoPolicy.
const (
	// NoPolicy disables the replacement policy (and so the active-entity limit or window).
	NoPolicy ReplacementPolicy = iota
	// LeastRecentlyUsed passivates the entities with the least recent activity.
	LeastRecentlyUsed
	// MostRecentlyUsed passivates the entities with the most recent activity.
	MostRecentlyUsed
	// LeastFrequentlyUsed passivates the entities with the least frequent activity.
	LeastFrequentlyUsed
)

// String returns the policy's configuration name.
func (p ReplacementPolicy) String() string {
	switch p {
	case NoPolicy:
		return "none"
	case LeastRecentlyUsed:
		return "least-recently-used"
	case MostRecentlyUsed:
		return "most-recently-used"
	case LeastFrequentlyUsed:
		return "least-frequently-used"
	default:
		return fmt.Sprintf("ReplacementPolicy(%d)", uint8(p))
	}
}

// PolicySettings configures a replacement policy.
type PolicySettings struct {
	// Policy is the replacement policy; NoPolicy by default.
	Policy ReplacementPolicy
	// Segmented, for LeastRecentlyUsed, holds the proportions of the limit given to each
	// segment of a segmented LRU, lowest (probationary) level first; they sum to 1. Nil or a
	// single level means plain LRU. Keys `least-recently-used.segmented.levels` and
	// `.proportions` (an empty list divides the limit evenly among the levels); none by
	// default, [0.2, 0.8] in `default-strategy`.
	Segmented []float64
	// DynamicAging, for LeastFrequentlyUsed, enables LFU with dynamic aging (LFU-DA). Key
	// `least-frequently-used.dynamic-aging`; off by default.
	DynamicAging bool
}

// LRU returns least-recently-used replacement.
func LRU() PolicySettings { return PolicySettings{Policy: LeastRecentlyUsed} }

// SegmentedLRU returns segmented least-recently-used replacement with the given proportions
// of the limit per level, lowest level first (S-LRU: 0.2, 0.8).
func SegmentedLRU(proportions ...float64) PolicySettings {
	return PolicySettings{Policy: LeastRecentlyUsed, Segmented: proportions}
}

// EvenlySegmentedLRU returns segmented least-recently-used replacement with the limit
// divided evenly among the given number of levels (S4LRU: 4).
func EvenlySegmentedLRU(levels int) PolicySettings {
	if levels < 2 {
		return LRU()
	}
	p := make([]float64, levels)
	for k := range p {
		p[k] = 1.0 / float64(levels)
	}
	return SegmentedLRU(p...)
}

// MRU returns most-recently-used replacement.
func MRU() PolicySettings { return PolicySettings{Policy: MostRecentlyUsed} }

// LFU returns least-frequently-used replacement, with dynamic aging if asked (LFU-DA).
func LFU(dynamicAging bool) PolicySettings {
	return PolicySettings{Policy: LeastFrequentlyUsed, DynamicAging: dynamicAging}
}

// AdmissionSettings configures the admission area of a composite strategy.
type AdmissionSettings struct {
	// Window is the admission window; off when its Policy is NoPolicy. Key `window`.
	Window WindowSettings
	// Filter decides whether an entity leaving the window (or a new one, without a window)
	// may replace the main area's victim. Key `filter`; none by default.
	Filter FilterSettings
}

// Enabled reports whether the strategy is composite: a window or a filter is configured.
func (a AdmissionSettings) Enabled() bool {
	return a.Window.Policy.Policy != NoPolicy || a.Filter.Filter != NoFilter
}

// WindowSettings configures the admission window, where newly activated entities start.
type WindowSettings struct {
	// Policy is the window's replacement policy; NoPolicy disables the window. Key
	// `window.policy`; none by default, least-recently-used in `default-strategy`.
	Policy PolicySettings
	// Proportion is the initial share of the limit given to the window, from 0 to 1. Key
	// `window.proportion`; 0.01.
	Proportion float64
	// MinimumProportion bounds the share from below while an optimizer adapts it. Key
	// `window.minimum-proportion`; 0.01.
	MinimumProportion float64
	// MaximumProportion bounds the share from above while an optimizer adapts it. Key
	// `window.maximum-proportion`; 1.0.
	MaximumProportion float64
	// Optimizer adapts the window's share; NoOptimizer keeps Proportion. Key
	// `window.optimizer`; off by default, hill-climbing in `default-strategy`.
	Optimizer Optimizer
	// HillClimbing tunes the hill-climbing optimizer. Key `window.hill-climbing`.
	HillClimbing HillClimbingSettings
}

// DefaultWindow returns reference.conf's window settings with the given window policy and
// optimizer: proportion 0.01, between 0.01 and 1.0, and the default hill-climbing tuning.
func DefaultWindow(policy PolicySettings, optimizer Optimizer) WindowSettings {
	return WindowSettings{
		Policy:            policy,
		Proportion:        0.01,
		MinimumProportion: 0.01,
		MaximumProportion: 1.0,
		Optimizer:         optimizer,
		HillClimbing:      DefaultHillClimbing(),
	}
}

// Optimizer names an admission window optimizer.
type Optimizer uint8

// The window optimizers; the config spells them "hill-climbing" and "none"/"off".
const (
	// NoOptimizer keeps the window at its initial proportion.
	NoOptimizer Optimizer = iota
	// HillClimbing adapts the window proportion by hill climbing on the active rate.
	HillClimbing
)

// String returns the optimizer's configuration name.
func (o Optimizer) String() string {
	switch o {
	case NoOptimizer:
		return "none"
	case HillClimbing:
		return "hill-climbing"
	default:
		return fmt.Sprintf("Optimizer(%d)", uint8(o))
	}
}

// HillClimbingSettings tunes the hill-climbing window optimizer.
type HillClimbingSettings struct {
	// AdjustMultiplier × the per-shard limit is the number of accesses between two
	// adjustments of the window proportion. Key `adjust-multiplier`; 10.0.
	AdjustMultiplier float64
	// InitialStep is the first change of the window proportion, also used on a restart.
	// Key `initial-step`; 0.0625.
	InitialStep float64
	// RestartThreshold is the change in active rate (0 to 1) that restarts climbing. Key
	// `restart-threshold`; 0.05.
	RestartThreshold float64
	// StepDecay multiplies the step after each adjustment. Key `step-decay`; 0.98.
	StepDecay float64
}

// DefaultHillClimbing returns reference.conf's hill-climbing tuning.
func DefaultHillClimbing() HillClimbingSettings {
	return HillClimbingSettings{AdjustMultiplier: 10.0, InitialStep: 0.0625, RestartThreshold: 0.05, StepDecay: 0.98}
}

// Filter names an admission filter.
type Filter uint8

// The admission filters; the config spells them "frequency-sketch" and "none"/"off".
const (
	// NoFilter always admits to the main area.
	NoFilter Filter = iota
	// FrequencySketch admits the candidate only if a frequency sketch estimates it was
	// accessed more often than the main area's victim (TinyLFU).
	FrequencySketch
)

// String returns the filter's configuration name.
func (f Filter) String() string {
	switch f {
	case NoFilter:
		return "none"
	case FrequencySketch:
		return "frequency-sketch"
	default:
		return fmt.Sprintf("Filter(%d)", uint8(f))
	}
}

// FilterSettings configures the admission filter.
type FilterSettings struct {
	// Filter is the admission filter; NoFilter by default, FrequencySketch in
	// `default-strategy`. Key `filter`.
	Filter Filter
	// Sketch tunes the frequency sketch. Key `frequency-sketch`.
	Sketch SketchSettings
}

// SketchSettings tunes the frequency sketch admission filter.
type SketchSettings struct {
	// Depth is the number of hash functions (rows), 1 to MaxSketchDepth. Key `depth`; 4.
	Depth int
	// CounterBits is the size of each counter: 2, 4, 8, 16, 32 or 64 bits. Key
	// `counter-bits`; 4.
	CounterBits int
	// WidthMultiplier × the per-shard limit (rounded up to a power of two) is the number of
	// counters per row. Key `width-multiplier`; 4.
	WidthMultiplier int
	// ResetMultiplier × the per-shard limit is the number of increments after which all
	// counters are halved. Key `reset-multiplier`; 10.0.
	ResetMultiplier float64
}

// DefaultSketch returns reference.conf's frequency sketch tuning.
func DefaultSketch() SketchSettings {
	return SketchSettings{Depth: 4, CounterBits: 4, WidthMultiplier: 4, ResetMultiplier: 10.0}
}

// Names of the strategy blocks reference.conf defines.
const (
	// DefaultIdleStrategyName is the default strategy: idle entities time out after 120 s.
	DefaultIdleStrategyName = "default-idle-strategy"
	// DefaultStrategyName is the recommended strategy with an active-entity limit.
	DefaultStrategyName = "default-strategy"
)

// DefaultSettings returns the strategy reference.conf selects: `default-idle-strategy`,
// which passivates entities idle for 120 s, checking every 60 s.
func DefaultSettings() Settings {
	s := strategyDefaults()
	s.Strategy = DefaultIdleStrategyName
	s.Idle = IdleSettings{Timeout: 120 * time.Second}
	return s
}

// strategyDefaults returns reference.conf's `strategy-defaults`: nothing enabled, with the
// tuning of the window, its optimizer and the frequency sketch ready for when they are.
func strategyDefaults() Settings {
	return Settings{Admission: AdmissionSettings{
		Window: DefaultWindow(PolicySettings{}, NoOptimizer),
		Filter: FilterSettings{Sketch: DefaultSketch()},
	}}
}

// DefaultStrategy returns reference.conf's `default-strategy`: Window-TinyLFU with a limit
// of 100,000 active entities per region, a least-recently-used admission window sized by
// hill climbing, a frequency-sketch admission filter and a segmented LRU main area with an
// 80% protected segment.
func DefaultStrategy() Settings {
	return Settings{
		Strategy:          DefaultStrategyName,
		ActiveEntityLimit: 100_000,
		Replacement:       SegmentedLRU(0.2, 0.8),
		Admission: AdmissionSettings{
			Window: DefaultWindow(LRU(), HillClimbing),
			Filter: FilterSettings{Filter: FrequencySketch, Sketch: DefaultSketch()},
		},
	}
}

// Disabled returns settings that never passivate (`strategy = none`).
func Disabled() Settings { return Settings{Strategy: "none"} }

// Limited returns a limit-based strategy with the given per-region limit and replacement
// policy, no idle timeout and no admission area (whose tuning is reference.conf's, ready
// to be enabled).
func Limited(limit int, replacement PolicySettings) Settings {
	s := strategyDefaults()
	s.Strategy = "custom"
	s.ActiveEntityLimit = limit
	s.Replacement = replacement
	return s
}

// LimitEnabled reports whether an active-entity limit applies: a limit and a replacement
// policy are both set.
func (s Settings) LimitEnabled() bool {
	return s.ActiveEntityLimit > 0 && s.Replacement.Policy != NoPolicy
}

// Enabled reports whether anything is ever passivated.
func (s Settings) Enabled() bool { return s.LimitEnabled() || s.Idle.Timeout > 0 }

// WithActiveEntityLimit returns a copy with another per-region limit.
func (s Settings) WithActiveEntityLimit(limit int) Settings {
	s.ActiveEntityLimit = limit
	return s
}

// WithIdleTimeout returns a copy that also passivates entities idle for timeout (checking
// every timeout/2); 0 turns idle passivation off.
func (s Settings) WithIdleTimeout(timeout time.Duration) Settings {
	s.Idle = IdleSettings{Timeout: timeout}
	return s
}

// Validate checks settings built in Go, naming each bad field by its configuration key
// under passivation.<Strategy>.
func (s Settings) Validate() error {
	name := s.Strategy
	if name == "" {
		name = "settings"
	}
	return s.validate("passivation." + name)
}

func (s Settings) validate(path string) error {
	if s.Idle.Timeout < 0 {
		return &ConfigError{Key: path + ".idle-entity.timeout", Value: s.Idle.Timeout,
			Allowed: "must be a positive duration, or none/off"}
	}
	if s.Idle.Interval < 0 {
		return &ConfigError{Key: path + ".idle-entity.interval", Value: s.Idle.Interval,
			Allowed: "must be a positive duration, or default"}
	}
	if s.ActiveEntityLimit < 0 {
		return &ConfigError{Key: path + ".active-entity-limit", Value: s.ActiveEntityLimit,
			Allowed: "must be a positive integer, or none/off"}
	}
	if err := s.Replacement.validate(path + ".replacement"); err != nil {
		return err
	}
	if err := s.Admission.validate(path + ".admission"); err != nil {
		return err
	}
	if s.ActiveEntityLimit > 0 && s.Replacement.Policy == NoPolicy && s.Admission.Enabled() {
		return &ConfigError{Key: path + ".replacement.policy", Value: "none",
			Allowed: "an admission window or filter needs a replacement policy for the main area"}
	}
	return nil
}

func (p PolicySettings) validate(path string) error {
	if p.Policy > LeastFrequentlyUsed {
		return &ConfigError{Key: path + ".policy", Value: p.Policy.String(),
			Allowed: "must be least-recently-used, most-recently-used, least-frequently-used, or none/off"}
	}
	if len(p.Segmented) == 0 {
		return nil
	}
	seg := path + ".least-recently-used.segmented"
	if p.Policy != LeastRecentlyUsed {
		return &ConfigError{Key: seg + ".proportions", Value: p.Segmented,
			Allowed: "segments only apply to the least-recently-used policy"}
	}
	if len(p.Segmented) > maxLevels {
		return &ConfigError{Key: seg + ".levels", Value: len(p.Segmented),
			Allowed: fmt.Sprintf("must be between 1 and %d", maxLevels)}
	}
	sum := 0.0
	for _, q := range p.Segmented {
		if !(q > 0 && q <= 1) {
			return &ConfigError{Key: seg + ".proportions", Value: p.Segmented,
				Allowed: "each proportion must be greater than 0 and at most 1"}
		}
		sum += q
	}
	if math.Abs(sum-1) > 1e-9 {
		return &ConfigError{Key: seg + ".proportions", Value: p.Segmented,
			Allowed: fmt.Sprintf("must sum to 1 (they sum to %g)", sum)}
	}
	return nil
}

// maxLevels is the largest number of segments of a segmented LRU.
const maxLevels = 255

func (a AdmissionSettings) validate(path string) error {
	w := a.Window
	wp := path + ".window"
	if err := w.Policy.validate(wp); err != nil {
		return err
	}
	for _, f := range []struct {
		key string
		v   float64
	}{{"proportion", w.Proportion}, {"minimum-proportion", w.MinimumProportion}, {"maximum-proportion", w.MaximumProportion}} {
		if !(f.v >= 0 && f.v <= 1) {
			return &ConfigError{Key: wp + "." + f.key, Value: f.v, Allowed: "must be between 0 and 1"}
		}
	}
	if w.Optimizer > HillClimbing {
		return &ConfigError{Key: wp + ".optimizer", Value: w.Optimizer.String(), Allowed: "must be hill-climbing, or none/off"}
	}
	if w.MinimumProportion > w.MaximumProportion {
		return &ConfigError{Key: wp + ".minimum-proportion", Value: w.MinimumProportion,
			Allowed: fmt.Sprintf("must not exceed maximum-proportion (%g)", w.MaximumProportion)}
	}
	if w.Optimizer != NoOptimizer {
		if w.Policy.Policy == NoPolicy {
			return &ConfigError{Key: wp + ".optimizer", Value: w.Optimizer.String(),
				Allowed: "a window optimizer needs a window policy (window.policy is none)"}
		}
		if w.Proportion < w.MinimumProportion || w.Proportion > w.MaximumProportion {
			return &ConfigError{Key: wp + ".proportion", Value: w.Proportion,
				Allowed: fmt.Sprintf("must be between minimum-proportion (%g) and maximum-proportion (%g) when an optimizer adapts it",
					w.MinimumProportion, w.MaximumProportion)}
		}
		if err := w.HillClimbing.validate(wp + ".hill-climbing"); err != nil {
			return err
		}
	}
	switch a.Filter.Filter {
	case NoFilter:
	case FrequencySketch:
		return a.Filter.Sketch.validate(path + ".frequency-sketch")
	default:
		return &ConfigError{Key: path + ".filter", Value: a.Filter.Filter.String(), Allowed: "must be frequency-sketch, or none/off"}
	}
	return nil
}

func (h HillClimbingSettings) validate(path string) error {
	switch {
	case !(h.AdjustMultiplier > 0 && h.AdjustMultiplier <= 1e6):
		return &ConfigError{Key: path + ".adjust-multiplier", Value: h.AdjustMultiplier, Allowed: "must be greater than 0 (and at most 1e6)"}
	case !(h.InitialStep > 0 && h.InitialStep <= 1):
		return &ConfigError{Key: path + ".initial-step", Value: h.InitialStep, Allowed: "must be greater than 0 and at most 1"}
	case !(h.RestartThreshold >= 0 && h.RestartThreshold <= 1):
		return &ConfigError{Key: path + ".restart-threshold", Value: h.RestartThreshold, Allowed: "must be between 0 and 1"}
	case !(h.StepDecay > 0 && h.StepDecay <= 1):
		return &ConfigError{Key: path + ".step-decay", Value: h.StepDecay, Allowed: "must be greater than 0 and at most 1"}
	}
	return nil
}

func (k SketchSettings) validate(path string) error {
	switch {
	case k.Depth < 1 || k.Depth > MaxSketchDepth:
		return &ConfigError{Key: path + ".depth", Value: k.Depth, Allowed: fmt.Sprintf("must be between 1 and %d", MaxSketchDepth)}
	case k.CounterBits != 2 && k.CounterBits != 4 && k.CounterBits != 8 && k.CounterBits != 16 && k.CounterBits != 32 && k.CounterBits != 64:
		return &ConfigError{Key: path + ".counter-bits", Value: k.CounterBits, Allowed: "must be 2, 4, 8, 16, 32 or 64"}
	case k.WidthMultiplier < 1 || k.WidthMultiplier > 1<<10:
		return &ConfigError{Key: path + ".width-multiplier", Value: k.WidthMultiplier, Allowed: "must be between 1 and 1024"}
	case !(k.ResetMultiplier > 0 && k.ResetMultiplier <= 1e6):
		return &ConfigError{Key: path + ".reset-multiplier", Value: k.ResetMultiplier, Allowed: "must be greater than 0 (and at most 1e6)"}
	}
	return nil
}

// String describes the strategy in one line, as Akka logs it.
func (s Settings) String() string {
	var b strings.Builder
	switch {
	case !s.Enabled():
		return "disabled"
	case s.LimitEnabled() && s.Admission.Enabled():
		fmt.Fprintf(&b, "composite strategy with limit of %d active entities per region, ", s.ActiveEntityLimit)
		w := s.Admission.Window
		if w.Policy.Policy == NoPolicy {
			b.WriteString("no admission window")
		} else {
			fmt.Fprintf(&b, "admission window (%s)", w.Policy.describe())
			if w.Optimizer == HillClimbing {
				h := w.HillClimbing
				fmt.Fprintf(&b, " with proportions [initial %g, min %g, max %g] adapting by hill climbing "+
					"[adjust multiplier %g, initial step %g, restart threshold %g, step decay %g]",
					w.Proportion, w.MinimumProportion, w.MaximumProportion,
					h.AdjustMultiplier, h.InitialStep, h.RestartThreshold, h.StepDecay)
			} else {
				fmt.Fprintf(&b, " with proportion %g", w.Proportion)
			}
		}
		if f := s.Admission.Filter; f.Filter == FrequencySketch {
			fmt.Fprintf(&b, ", admit using frequency sketch [width multiplier %d, reset multiplier %g, depth %d, counter bits %d]",
				f.Sketch.WidthMultiplier, f.Sketch.ResetMultiplier, f.Sketch.Depth, f.Sketch.CounterBits)
		} else {
			b.WriteString(", always admit")
		}
		fmt.Fprintf(&b, ", main (%s)", s.Replacement.describe())
	case s.LimitEnabled():
		fmt.Fprintf(&b, "%s when over %d active entities per region", s.Replacement.describe(), s.ActiveEntityLimit)
	}
	if s.Idle.Timeout > 0 {
		if b.Len() > 0 {
			b.WriteString(" and ")
		}
		fmt.Fprintf(&b, "idle entities after %s, checked every %s", s.Idle.Timeout, s.Idle.CheckInterval())
	}
	return b.String()
}

func (p PolicySettings) describe() string {
	switch {
	case p.Policy == LeastRecentlyUsed && len(p.Segmented) >= 2:
		return fmt.Sprintf("least recently used entities, segmented with %d levels of proportions %v", len(p.Segmented), p.Segmented)
	case p.Policy == LeastRecentlyUsed:
		return "least recently used entities"
	case p.Policy == MostRecentlyUsed:
		return "most recently used entities"
	case p.Policy == LeastFrequentlyUsed && p.DynamicAging:
		return "least frequently used entities, with dynamic aging"
	case p.Policy == LeastFrequentlyUsed:
		return "least frequently used entities"
	default:
		return "none"
	}
}
