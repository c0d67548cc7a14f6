package passivation

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

// m is shorthand for a configuration block.
type m = map[string]any

// named returns a limit-based strategy as parsed from a block of the given name.
func named(name string, limit int, p PolicySettings) Settings {
	s := Limited(limit, p)
	s.Strategy = name
	return s
}

func TestParseGood(t *testing.T) {
	tests := []struct {
		name string
		tree m
		want Settings
	}{
		{"nil is reference.conf's default", nil, DefaultSettings()},
		{"empty block", m{}, DefaultSettings()},
		{"default strategy", m{"strategy": "default-strategy"}, DefaultStrategy()},
		{"default strategy with a limit", m{"strategy": "default-strategy", "default-strategy": m{"active-entity-limit": 1000000}},
			DefaultStrategy().WithActiveEntityLimit(1_000_000)},
		{"default strategy with idle", m{"strategy": "default-strategy", "default-strategy": m{"idle-entity": m{"timeout": "30 minutes"}}},
			DefaultStrategy().WithIdleTimeout(30 * time.Minute)},
		{"limit from TOML (int64) and JSON (float64)", m{"strategy": "default-strategy", "default-strategy": m{"active-entity-limit": int64(2000)}},
			DefaultStrategy().WithActiveEntityLimit(2000)},
		{"dotted keys as in reference.conf", m{"default-idle-strategy": m{"idle-entity.timeout": "10s", "idle-entity.interval": "1 s"}},
			func() Settings {
				s := DefaultSettings()
				s.Idle = IdleSettings{Timeout: 10 * time.Second, Interval: time.Second}
				return s
			}()},
		{"idle timeout in minutes", m{"default-idle-strategy": m{"idle-entity": m{"timeout": "2 minutes"}}},
			DefaultSettings().WithIdleTimeout(2 * time.Minute)},
		{"strategy none", m{"strategy": "none"}, Disabled()},
		{"strategy OFF", m{"strategy": "OFF"}, Disabled()},
		{"strategy false (YAML 1.1 off)", m{"strategy": false}, Disabled()},
		{"limit none turns the default strategy into idle only",
			m{"strategy": "default-strategy", "default-strategy": m{"active-entity-limit": "none", "idle-entity": m{"timeout": "5m"}}},
			func() Settings {
				s := DefaultStrategy().WithIdleTimeout(5 * time.Minute)
				s.ActiveEntityLimit = 0
				return s
			}()},
		{"custom LRU strategy (Akka's documentation example)",
			m{"strategy": "custom-lru-strategy", "custom-lru-strategy": m{"active-entity-limit": 1000000, "replacement": m{"policy": "least-recently-used"}}},
			named("custom-lru-strategy", 1_000_000, LRU())},
		{"S-LRU", m{"strategy": "slru", "slru": m{"active-entity-limit": 10, "replacement": m{"policy": "least-recently-used",
			"least-recently-used": m{"segmented": m{"levels": 2, "proportions": []any{0.2, 0.8}}}}}},
			named("slru", 10, SegmentedLRU(0.2, 0.8))},
		{"S4LRU divides evenly", m{"strategy": "s4lru", "s4lru": m{"active-entity-limit": 10, "replacement": m{"policy": "least-recently-used",
			"least-recently-used": m{"segmented": m{"levels": 4}}}}},
			named("s4lru", 10, SegmentedLRU(0.25, 0.25, 0.25, 0.25))},
		{"one level is plain LRU", m{"strategy": "x", "x": m{"active-entity-limit": 10, "replacement": m{"policy": "least-recently-used",
			"least-recently-used": m{"segmented": m{"levels": 1}}}}},
			named("x", 10, LRU())},
		{"MRU", m{"strategy": "x", "x": m{"active-entity-limit": 10, "replacement": m{"policy": "most-recently-used"}}},
			named("x", 10, MRU())},
		{"LFU-DA with HOCON on", m{"strategy": "lfuda", "lfuda": m{"active-entity-limit": 1000, "replacement": m{"policy": "least-frequently-used",
			"least-frequently-used": m{"dynamic-aging": "on"}}}}, named("lfuda", 1000, LFU(true))},
		{"strategy-defaults apply to user blocks",
			m{"strategy": "mine", "strategy-defaults": m{"active-entity-limit": 500}, "mine": m{"replacement": m{"policy": "most-recently-used"}}},
			named("mine", 500, MRU())},
		{"window proportion and filter", m{"strategy": "w", "w": m{"active-entity-limit": 100, "replacement": m{"policy": "least-recently-used"},
			"admission": m{"window": m{"policy": "least-recently-used", "proportion": 0.1}, "filter": "frequency-sketch",
				"frequency-sketch": m{"counter-bits": 8, "depth": 3}}}},
			Settings{Strategy: "w", ActiveEntityLimit: 100, Replacement: LRU(), Admission: AdmissionSettings{
				Window: WindowSettings{Policy: LRU(), Proportion: 0.1, MinimumProportion: 0.01, MaximumProportion: 1, HillClimbing: DefaultHillClimbing()},
				Filter: FilterSettings{Filter: FrequencySketch, Sketch: SketchSettings{Depth: 3, CounterBits: 8, WidthMultiplier: 4, ResetMultiplier: 10}},
			}}},
		{"a selected block's proportions are ignored when levels is none (as in Akka)",
			m{"strategy": "default-strategy", "default-strategy": m{"replacement": m{"least-recently-used": m{"segmented": m{"levels": "off"}}}}},
			func() Settings { s := DefaultStrategy(); s.Replacement = LRU(); return s }()},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Parse(tc.tree)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("Parse =\n%#v\nwant\n%#v", got, tc.want)
			}
		})
	}
}

func TestParseBad(t *testing.T) {
	ds := func(block m) m { return m{"strategy": "default-strategy", "default-strategy": block} }
	tests := []struct {
		name   string
		tree   m
		path   string // the full key the error must name
		reason string // part of what is allowed
	}{
		{"proportions do not sum to 1", ds(m{"replacement": m{"least-recently-used": m{"segmented": m{"proportions": []any{0.3, 0.8}}}}}),
			"passivation.default-strategy.replacement.least-recently-used.segmented.proportions", "sum to 1"},
		{"levels differ from the proportions", ds(m{"replacement": m{"least-recently-used": m{"segmented": m{"levels": 3}}}}),
			"passivation.default-strategy.replacement.least-recently-used.segmented.proportions", "one proportion per level"},
		{"a zero proportion", ds(m{"replacement": m{"least-recently-used": m{"segmented": m{"proportions": []any{0, 1}}}}}),
			"passivation.default-strategy.replacement.least-recently-used.segmented.proportions", "greater than 0"},
		{"levels 0", ds(m{"replacement": m{"least-recently-used": m{"segmented": m{"levels": 0, "proportions": []any{}}}}}),
			"passivation.default-strategy.replacement.least-recently-used.segmented.levels", "from 1 to 255"},
		{"minimum over maximum proportion", ds(m{"admission": m{"window": m{"minimum-proportion": 0.5, "maximum-proportion": 0.2}}}),
			"passivation.default-strategy.admission.window.minimum-proportion", "must not exceed maximum-proportion"},
		{"minimum over maximum in strategy-defaults, without an optimizer",
			m{"strategy-defaults": m{"admission": m{"window": m{"minimum-proportion": 0.6, "maximum-proportion": 0.5}}}},
			"passivation.strategy-defaults.admission.window.minimum-proportion", "must not exceed maximum-proportion (0.5)"},
		{"initial proportion outside the optimizer's bounds", ds(m{"admission": m{"window": m{"proportion": 0.005}}}),
			"passivation.default-strategy.admission.window.proportion", "between minimum-proportion"},
		{"proportion over 1", ds(m{"admission": m{"window": m{"maximum-proportion": 1.5}}}),
			"passivation.default-strategy.admission.window.maximum-proportion", "between 0 and 1"},
		{"counter bits 3", ds(m{"admission": m{"frequency-sketch": m{"counter-bits": 3}}}),
			"passivation.default-strategy.admission.frequency-sketch.counter-bits", "2, 4, 8, 16, 32 or 64"},
		{"depth 0", ds(m{"admission": m{"frequency-sketch": m{"depth": 0}}}),
			"passivation.default-strategy.admission.frequency-sketch.depth", "from 1 to 16"},
		{"width multiplier 2.5", ds(m{"admission": m{"frequency-sketch": m{"width-multiplier": 2.5}}}),
			"passivation.default-strategy.admission.frequency-sketch.width-multiplier", "integer"},
		{"reset multiplier -1", ds(m{"admission": m{"frequency-sketch": m{"reset-multiplier": -1}}}),
			"passivation.default-strategy.admission.frequency-sketch.reset-multiplier", "greater than 0"},
		{"initial step 2", ds(m{"admission": m{"window": m{"hill-climbing": m{"initial-step": 2}}}}),
			"passivation.default-strategy.admission.window.hill-climbing.initial-step", "at most 1"},
		{"optimizer without a window policy",
			m{"strategy": "w", "w": m{"active-entity-limit": 10, "replacement": m{"policy": "least-recently-used"},
				"admission": m{"window": m{"optimizer": "hill-climbing"}}}},
			"passivation.w.admission.window.optimizer", "needs a window policy"},
		{"unknown optimizer", ds(m{"admission": m{"window": m{"optimizer": "simulated-annealing"}}}),
			"passivation.default-strategy.admission.window.optimizer", "hill-climbing, or none/off"},
		{"unknown filter", ds(m{"admission": m{"filter": "bloom"}}),
			"passivation.default-strategy.admission.filter", "frequency-sketch, or none/off"},
		{"admission without a main policy", m{"strategy": "w", "w": m{"active-entity-limit": 10, "admission": m{"filter": "frequency-sketch"}}},
			"passivation.w.replacement.policy", "needs a replacement policy"},
		{"misspelt block", ds(m{"replacment": m{"policy": "least-recently-used"}}),
			"passivation.default-strategy.replacment", "unknown key; allowed: idle-entity, active-entity-limit, replacement, admission"},
		{"misspelt nested key", ds(m{"admission": m{"window": m{"hill-climbing": m{"step": 0.1}}}}),
			"passivation.default-strategy.admission.window.hill-climbing.step", "unknown key"},
		{"settings in most-recently-used", ds(m{"replacement": m{"most-recently-used": m{"dynamic-aging": "on"}}}),
			"passivation.default-strategy.replacement.most-recently-used.dynamic-aging", "takes no settings"},
		{"unknown policy", ds(m{"replacement": m{"policy": "lru"}}),
			"passivation.default-strategy.replacement.policy", "least-recently-used, most-recently-used, least-frequently-used, or none/off"},
		{"bare number duration", m{"default-idle-strategy": m{"idle-entity": m{"timeout": 120}}},
			"passivation.default-idle-strategy.idle-entity.timeout", "needs a unit"},
		{"unknown unit", m{"default-idle-strategy": m{"idle-entity": m{"timeout": "12 parsecs"}}},
			"passivation.default-idle-strategy.idle-entity.timeout", "such as 120s"},
		{"zero timeout", m{"default-idle-strategy": m{"idle-entity": m{"timeout": "0s"}}},
			"passivation.default-idle-strategy.idle-entity.timeout", "positive"},
		{"bad interval", m{"default-idle-strategy": m{"idle-entity": m{"interval": "often"}}},
			"passivation.default-idle-strategy.idle-entity.interval", "or default"},
		{"zero limit", ds(m{"active-entity-limit": 0}),
			"passivation.default-strategy.active-entity-limit", "positive integer, or none/off"},
		{"fractional limit", ds(m{"active-entity-limit": 10.5}),
			"passivation.default-strategy.active-entity-limit", "positive integer"},
		{"dynamic aging maybe", ds(m{"replacement": m{"least-frequently-used": m{"dynamic-aging": "maybe"}}}),
			"passivation.default-strategy.replacement.least-frequently-used.dynamic-aging", "on or off"},
		{"proportions not a list", ds(m{"replacement": m{"least-recently-used": m{"segmented": m{"proportions": "0.2,0.8"}}}}),
			"passivation.default-strategy.replacement.least-recently-used.segmented.proportions", "list of numbers"},
		{"no such strategy", m{"strategy": "mine"},
			"passivation.strategy", "no strategy block of that name; defined: default-idle-strategy, default-strategy, or none/off"},
		{"strategy not a name", m{"strategy": 3}, "passivation.strategy", "must name a strategy block"},
		{"misspelt top-level key", m{"stratgy": "default-strategy"}, "passivation.stratgy", "unknown key"},
		{"bad strategy-defaults, even if unused", m{"strategy-defaults": m{"replacement": m{"policy": "random"}}},
			"passivation.strategy-defaults.replacement.policy", "least-recently-used"},
		{"bad unselected block", m{"other": m{"active-entity-limit": -5}},
			"passivation.other.active-entity-limit", "positive integer"},
		{"block that is not a map", ds(m{"idle-entity": "10s"}),
			"passivation.default-strategy.idle-entity", "must be a block"},
		{"dotted key clashing with a value", ds(m{"idle-entity": m{"timeout": "1s", "timeout.x": "2s"}}),
			"passivation.default-strategy.idle-entity.timeout", "conflicts"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse(tc.tree)
			var ce *ConfigError
			if !errors.As(err, &ce) {
				t.Fatalf("Parse error = %v, want a *ConfigError", err)
			}
			if ce.Key != tc.path {
				t.Errorf("error names %s, want %s (%v)", ce.Key, tc.path, err)
			}
			if !strings.Contains(err.Error(), tc.reason) {
				t.Errorf("error %q does not say %q", err, tc.reason)
			}
			if !strings.HasPrefix(err.Error(), tc.path+" = ") {
				t.Errorf("error %q does not start with the key and its value", err)
			}
		})
	}
}

func TestParseErrorShowsTheValue(t *testing.T) {
	_, err := Parse(m{"strategy": "default-strategy", "default-strategy": m{"replacement": m{"least-recently-used": m{"segmented": m{"proportions": []any{0.3, 0.8}}}}}})
	want := "passivation.default-strategy.replacement.least-recently-used.segmented.proportions = [0.3, 0.8]: must sum to 1 (they sum to 1.1)"
	if err == nil || err.Error() != want {
		t.Fatalf("error = %v\nwant    %s", err, want)
	}
}

func TestParseStrategyOverridesTheSelection(t *testing.T) {
	tree := m{"strategy": "default-idle-strategy", "mine": m{"active-entity-limit": 7, "replacement": m{"policy": "least-frequently-used"}}}
	got, err := ParseStrategy(tree, "mine")
	if err != nil {
		t.Fatal(err)
	}
	if want := named("mine", 7, LFU(false)); !reflect.DeepEqual(got, want) {
		t.Fatalf("got %#v, want %#v", got, want)
	}
	if _, err := ParseStrategy(tree, "yours"); err == nil {
		t.Fatal("ParseStrategy accepted an undefined strategy")
	}
}

func TestParseDoesNotModifyItsInput(t *testing.T) {
	tree := m{"strategy": "default-strategy", "default-strategy": m{"idle-entity.timeout": "1m"}}
	if _, err := Parse(tree); err != nil {
		t.Fatal(err)
	}
	block := tree["default-strategy"].(m)
	if _, ok := block["idle-entity.timeout"]; !ok || len(block) != 1 {
		t.Fatalf("Parse modified its input: %v", tree)
	}
}

func TestValidateGoSettings(t *testing.T) {
	for _, s := range []Settings{DefaultSettings(), DefaultStrategy(), Disabled(), Limited(10, EvenlySegmentedLRU(4)), Limited(3, LFU(true))} {
		if err := s.Validate(); err != nil {
			t.Errorf("%v: %v", s, err)
		}
	}
	bad := DefaultStrategy()
	bad.Admission.Filter.Sketch.CounterBits = 3
	err := bad.Validate()
	if err == nil || !strings.HasPrefix(err.Error(), "passivation.default-strategy.admission.frequency-sketch.counter-bits = 3:") {
		t.Fatalf("Validate = %v", err)
	}
	if err := Limited(10, SegmentedLRU(0.5, 0.6)).Validate(); err == nil {
		t.Fatal("Validate accepted proportions summing to 1.1")
	}
	if err := Limited(10, PolicySettings{Policy: MostRecentlyUsed, Segmented: []float64{0.5, 0.5}}).Validate(); err == nil {
		t.Fatal("Validate accepted segments on MRU")
	}
}

func TestSettingsString(t *testing.T) {
	for s, want := range map[string]string{
		DefaultSettings().String():      "idle entities after 2m0s, checked every 1m0s",
		Disabled().String():             "disabled",
		Limited(10, LFU(true)).String(): "least frequently used entities, with dynamic aging when over 10 active entities per region",
	} {
		if s != want {
			t.Errorf("String() = %q, want %q", s, want)
		}
	}
	if s := DefaultStrategy().String(); !strings.HasPrefix(s, "composite strategy with limit of 100000 active entities per region, admission window (least recently used entities)") {
		t.Errorf("DefaultStrategy().String() = %q", s)
	}
}
