package passivation

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/shardmesh/shardmesh/config/value"
)

// ConfigError reports a bad configuration value: the full key path, the value found and
// what is allowed. It is the configuration's one error type (config/value.Error).
type ConfigError = value.Error

// Parse reads the `passivation` block of a configuration, as decoded from YAML, TOML or
// JSON into nested maps, with keys spelled as in reference.conf (HOCON-style dotted keys
// such as "idle-entity.timeout" are accepted too) and durations written as "120s",
// "100 ms", "2 minutes" or "none"/"off". It merges the block over reference.conf: the
// selected strategy block (key `strategy`, "default-idle-strategy" by default) falls back
// to reference.conf's block of that name and then to `strategy-defaults`. Every strategy
// block is checked, selected or not; unknown keys, bad values and impossible combinations
// are reported as a *ConfigError naming the full key. A nil tree gives DefaultSettings.
func Parse(tree map[string]any) (Settings, error) { return parse(tree, "") }

// ParseStrategy is Parse with the strategy selected by name instead of by the tree's
// `strategy` key ("none" or "off" disables passivation).
func ParseStrategy(tree map[string]any, name string) (Settings, error) {
	if name == "" {
		return Settings{}, &ConfigError{Key: "passivation.strategy", Value: name, Allowed: "must name a strategy block, or be none/off"}
	}
	return parse(tree, name)
}

const root = "passivation"

func parse(tree map[string]any, selected string) (Settings, error) {
	user, err := expand(tree, root)
	if err != nil {
		return Settings{}, err
	}
	ref := reference()

	strategy := ref["strategy"].(string)
	if v, ok := user["strategy"]; ok && v != nil {
		s, ok := v.(string)
		if !ok {
			if b, isBool := v.(bool); !isBool || b {
				return Settings{}, &ConfigError{Key: root + ".strategy", Value: v, Allowed: "must name a strategy block, or be none/off"}
			}
			s = "off"
		}
		strategy = strings.TrimSpace(s)
	}
	if selected != "" {
		strategy = selected
	}

	defaults := ref["strategy-defaults"].(map[string]any)
	if v, ok := user["strategy-defaults"]; ok && v != nil {
		m, ok := v.(map[string]any)
		if !ok {
			return Settings{}, &ConfigError{Key: root + ".strategy-defaults", Value: v, Allowed: "must be a block of strategy settings"}
		}
		defaults = merge(m, defaults)
	}
	if _, err := parseBlock(defaults, root+".strategy-defaults"); err != nil {
		return Settings{}, err
	}

	keys := make([]string, 0, len(user))
	for k := range user {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var names []string
	for _, k := range keys {
		switch k {
		case "strategy", "strategy-defaults":
			continue
		}
		if v := user[k]; v != nil {
			if _, ok := v.(map[string]any); !ok {
				return Settings{}, &ConfigError{Key: root + "." + k, Value: v,
					Allowed: "unknown key; the passivation block holds strategy, strategy-defaults and strategy blocks (maps)"}
			}
		}
		names = append(names, k)
	}
	for k := range ref {
		if k != "strategy" && k != "strategy-defaults" && !slices.Contains(names, k) {
			names = append(names, k)
		}
	}
	slices.Sort(names)

	blocks := make(map[string]Settings, len(names))
	for _, name := range names {
		over, _ := user[name].(map[string]any)
		refBlock, _ := ref[name].(map[string]any)
		merged := merge(over, merge(refBlock, defaults))
		path := root + "." + name
		s, err := parseBlock(merged, path)
		if err != nil {
			return Settings{}, err
		}
		if err := s.validate(path); err != nil {
			return Settings{}, err
		}
		s.Strategy = name
		blocks[name] = s
	}

	switch strings.ToLower(strategy) {
	case "none", "off":
		return Disabled(), nil
	}
	s, ok := blocks[strategy]
	if !ok {
		return Settings{}, &ConfigError{Key: root + ".strategy", Value: strategy,
			Allowed: "no strategy block of that name; defined: " + strings.Join(names, ", ") + ", or none/off"}
	}
	return s, nil
}

// expand deep-copies a tree, turning HOCON-style dotted keys ("idle-entity.timeout") into
// nested maps.
func expand(tree map[string]any, path string) (map[string]any, error) {
	out := make(map[string]any, len(tree))
	keys := make([]string, 0, len(tree))
	for k := range tree {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		v := tree[k]
		if m, ok := v.(map[string]any); ok {
			sub, err := expand(m, path+"."+k)
			if err != nil {
				return nil, err
			}
			v = sub
		}
		parts := strings.Split(k, ".")
		node := out
		for i, part := range parts {
			if part == "" {
				return nil, &ConfigError{Key: path + "." + k, Value: v, Allowed: "empty key segment"}
			}
			if i == len(parts)-1 {
				if old, ok := node[part].(map[string]any); ok {
					if nm, ok := v.(map[string]any); ok {
						node[part] = merge(nm, old)
						continue
					}
					return nil, &ConfigError{Key: path + "." + k, Value: v, Allowed: "conflicts with a block of the same name"}
				}
				node[part] = v
				continue
			}
			next, ok := node[part].(map[string]any)
			if !ok {
				if _, exists := node[part]; exists {
					return nil, &ConfigError{Key: path + "." + strings.Join(parts[:i+1], "."), Value: node[part], Allowed: "conflicts with a block of the same name"}
				}
				next = map[string]any{}
				node[part] = next
			}
			node = next
		}
	}
	return out, nil
}

// merge returns over merged on top of under: blocks merge key by key, any other value of
// over (including a list) replaces under's; a null in over leaves under's value.
func merge(over, under map[string]any) map[string]any {
	out := make(map[string]any, len(under)+len(over))
	for k, v := range under {
		out[k] = v
	}
	for k, v := range over {
		if v == nil {
			continue
		}
		om, oIsMap := v.(map[string]any)
		um, uIsMap := out[k].(map[string]any)
		if oIsMap && uIsMap {
			out[k] = merge(om, um)
			continue
		}
		out[k] = v
	}
	return out
}

// block is a map being read, with its key path for error messages.
type block struct {
	m    map[string]any
	path string
}

// sub returns the block under key of b, checking that only the allowed keys occur in it.
func (b block) sub(key string, allowed ...string) (block, error) {
	v, ok := b.m[key]
	if !ok || v == nil {
		v = map[string]any{}
	}
	m, ok := v.(map[string]any)
	if !ok {
		return block{}, &ConfigError{Key: b.path + "." + key, Value: v, Allowed: "must be a block (a map)"}
	}
	nb := block{m: m, path: b.path + "." + key}
	return nb, nb.only(allowed...)
}

func (b block) only(allowed ...string) error {
	keys := make([]string, 0, len(b.m))
	for k := range b.m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if !slices.Contains(allowed, k) {
			reason := "unknown key"
			if len(allowed) > 0 {
				reason += "; allowed: " + strings.Join(allowed, ", ")
			} else {
				reason += "; this block takes no settings"
			}
			return &ConfigError{Key: b.path + "." + k, Value: b.m[k], Allowed: reason}
		}
	}
	return nil
}

func (b block) err(key string, reason string) error {
	return &ConfigError{Key: b.path + "." + key, Value: b.m[key], Allowed: reason}
}

func (b block) word(key string) (string, bool) {
	s, ok := b.m[key].(string)
	return strings.ToLower(strings.TrimSpace(s)), ok
}

func (b block) duration(key, reason string) (time.Duration, error) {
	v := b.m[key]
	if d, ok := v.(time.Duration); ok {
		if d <= 0 {
			return 0, b.err(key, reason)
		}
		return d, nil
	}
	s, ok := v.(string)
	if !ok {
		return 0, b.err(key, reason+" (a number needs a unit)")
	}
	d, err := value.ParseDuration(s)
	if err != nil || d <= 0 {
		return 0, b.err(key, reason)
	}
	return d, nil
}

func (b block) integer(key string, lo, hi int, reason string) (int, error) {
	n, ok := value.ToInt(b.m[key])
	if !ok || n < lo || n > hi {
		return 0, b.err(key, reason)
	}
	return n, nil
}

func (b block) float(key string, reason string) (float64, error) {
	f, ok := value.ToFloat(b.m[key])
	if !ok {
		return 0, b.err(key, reason)
	}
	return f, nil
}

func (b block) boolean(key string) (bool, error) {
	switch v := b.m[key].(type) {
	case bool:
		return v, nil
	case string:
		switch strings.ToLower(strings.TrimSpace(v)) {
		case "on", "true", "yes":
			return true, nil
		case "off", "false", "no":
			return false, nil
		}
	}
	return false, b.err(key, "must be on or off (true or false)")
}

func (b block) floats(key string) ([]float64, error) {
	const reason = "must be a list of numbers"
	var out []float64
	switch v := b.m[key].(type) {
	case []float64:
		out = slices.Clone(v)
	case []any:
		for _, x := range v {
			f, ok := value.ToFloat(x)
			if !ok {
				return nil, b.err(key, reason)
			}
			out = append(out, f)
		}
	case []int:
		for _, x := range v {
			out = append(out, float64(x))
		}
	default:
		return nil, b.err(key, reason)
	}
	return out, nil
}

// parseBlock reads one strategy block (already merged over the defaults).
func parseBlock(m map[string]any, path string) (Settings, error) {
	var s Settings
	b := block{m: m, path: path}
	if err := b.only("idle-entity", "active-entity-limit", "replacement", "admission"); err != nil {
		return s, err
	}

	idle, err := b.sub("idle-entity", "timeout", "interval")
	if err != nil {
		return s, err
	}
	if !value.IsOff(idle.m["timeout"]) {
		if s.Idle.Timeout, err = idle.duration("timeout", "must be a positive duration such as 120s, 100 ms or 2 minutes, or none/off"); err != nil {
			return s, err
		}
		if w, _ := idle.word("interval"); w != "default" {
			if s.Idle.Interval, err = idle.duration("interval", "must be a positive duration such as 60s, or default (half the timeout)"); err != nil {
				return s, err
			}
		}
	}

	if !value.IsOff(b.m["active-entity-limit"]) {
		if s.ActiveEntityLimit, err = b.integer("active-entity-limit", 1, math.MaxInt32, "must be a positive integer, or none/off"); err != nil {
			return s, err
		}
	}

	repl, err := b.sub("replacement", "policy", "least-recently-used", "most-recently-used", "least-frequently-used")
	if err != nil {
		return s, err
	}
	if s.Replacement, err = parsePolicy(repl); err != nil {
		return s, err
	}

	adm, err := b.sub("admission", "window", "filter", "frequency-sketch")
	if err != nil {
		return s, err
	}
	if s.Admission, err = parseAdmission(adm); err != nil {
		return s, err
	}
	return s, nil
}

// parsePolicy reads a block holding `policy` and the blocks of each replacement policy.
func parsePolicy(b block) (PolicySettings, error) {
	var p PolicySettings
	lru, err := b.sub("least-recently-used", "segmented")
	if err != nil {
		return p, err
	}
	seg, err := lru.sub("segmented", "levels", "proportions")
	if err != nil {
		return p, err
	}
	if _, err := b.sub("most-recently-used"); err != nil {
		return p, err
	}
	lfu, err := b.sub("least-frequently-used", "dynamic-aging")
	if err != nil {
		return p, err
	}
	if p.DynamicAging, err = lfu.boolean("dynamic-aging"); err != nil {
		return p, err
	}
	segmented, err := parseSegmented(seg)
	if err != nil {
		return p, err
	}

	const allowed = "must be least-recently-used, most-recently-used, least-frequently-used, or none/off"
	if value.IsOff(b.m["policy"]) {
		return PolicySettings{}, nil
	}
	word, ok := b.word("policy")
	if !ok {
		return p, b.err("policy", allowed)
	}
	switch word {
	case "least-recently-used":
		p = PolicySettings{Policy: LeastRecentlyUsed, Segmented: segmented}
	case "most-recently-used":
		p = PolicySettings{Policy: MostRecentlyUsed}
	case "least-frequently-used":
		p.Policy = LeastFrequentlyUsed
	default:
		return p, b.err("policy", allowed)
	}
	return p, nil
}

// parseSegmented reads `least-recently-used.segmented`: nil for plain LRU, else the
// proportions of each level.
func parseSegmented(b block) ([]float64, error) {
	proportions, err := b.floats("proportions")
	if err != nil {
		return nil, err
	}
	if value.IsOff(b.m["levels"]) {
		return nil, nil // proportions are ignored, as in Akka
	}
	levels, err := b.integer("levels", 1, maxLevels, fmt.Sprintf("must be a number of levels from 1 to %d, or none/off", maxLevels))
	if err != nil {
		return nil, err
	}
	if len(proportions) == 0 {
		if levels < 2 {
			return nil, nil
		}
		return EvenlySegmentedLRU(levels).Segmented, nil
	}
	if len(proportions) != levels {
		return nil, b.err("proportions", fmt.Sprintf("must hold one proportion per level (levels = %d), or be empty to divide evenly", levels))
	}
	sum := 0.0
	for _, q := range proportions {
		if !(q > 0 && q <= 1) {
			return nil, b.err("proportions", "each proportion must be greater than 0 and at most 1")
		}
		sum += q
	}
	if math.Abs(sum-1) > 1e-9 {
		return nil, b.err("proportions", fmt.Sprintf("must sum to 1 (they sum to %g)", sum))
	}
	if levels < 2 {
		return nil, nil
	}
	return proportions, nil
}

func parseAdmission(b block) (AdmissionSettings, error) {
	var a AdmissionSettings
	w, err := b.sub("window", "proportion", "minimum-proportion", "maximum-proportion", "optimizer", "hill-climbing",
		"policy", "least-recently-used", "most-recently-used", "least-frequently-used")
	if err != nil {
		return a, err
	}
	if a.Window.Policy, err = parsePolicy(w); err != nil {
		return a, err
	}
	for _, f := range []struct {
		key string
		dst *float64
	}{{"proportion", &a.Window.Proportion}, {"minimum-proportion", &a.Window.MinimumProportion}, {"maximum-proportion", &a.Window.MaximumProportion}} {
		v, err := w.float(f.key, "must be a proportion between 0 and 1")
		if err != nil {
			return a, err
		}
		if !(v >= 0 && v <= 1) {
			return a, w.err(f.key, "must be a proportion between 0 and 1")
		}
		*f.dst = v
	}
	if a.Window.MinimumProportion > a.Window.MaximumProportion {
		return a, w.err("minimum-proportion", fmt.Sprintf("must not exceed maximum-proportion (%g)", a.Window.MaximumProportion))
	}
	hc, err := w.sub("hill-climbing", "adjust-multiplier", "initial-step", "restart-threshold", "step-decay")
	if err != nil {
		return a, err
	}
	h := &a.Window.HillClimbing
	for _, f := range []struct {
		key string
		dst *float64
	}{{"adjust-multiplier", &h.AdjustMultiplier}, {"initial-step", &h.InitialStep}, {"restart-threshold", &h.RestartThreshold}, {"step-decay", &h.StepDecay}} {
		if *f.dst, err = hc.float(f.key, "must be a number"); err != nil {
			return a, err
		}
	}
	if err := h.validate(hc.path); err != nil {
		return a, err
	}
	if !value.IsOff(w.m["optimizer"]) {
		if word, _ := w.word("optimizer"); word != "hill-climbing" {
			return a, w.err("optimizer", "must be hill-climbing, or none/off")
		}
		a.Window.Optimizer = HillClimbing
	}

	fs, err := b.sub("frequency-sketch", "depth", "counter-bits", "width-multiplier", "reset-multiplier")
	if err != nil {
		return a, err
	}
	k := &a.Filter.Sketch
	if k.Depth, err = fs.integer("depth", 1, MaxSketchDepth, fmt.Sprintf("must be a number of hash functions from 1 to %d", MaxSketchDepth)); err != nil {
		return a, err
	}
	if k.CounterBits, err = fs.integer("counter-bits", 2, 64, "must be 2, 4, 8, 16, 32 or 64"); err != nil {
		return a, err
	}
	if k.WidthMultiplier, err = fs.integer("width-multiplier", 1, 1<<10, "must be an integer from 1 to 1024"); err != nil {
		return a, err
	}
	if k.ResetMultiplier, err = fs.float("reset-multiplier", "must be a number greater than 0"); err != nil {
		return a, err
	}
	if err := k.validate(fs.path); err != nil {
		return a, err
	}
	if !value.IsOff(b.m["filter"]) {
		if word, _ := b.word("filter"); word != "frequency-sketch" {
			return a, b.err("filter", "must be frequency-sketch, or none/off")
		}
		a.Filter.Filter = FrequencySketch
	}
	return a, nil
}
