package config

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/BurntSushi/toml"
	"gopkg.in/yaml.v3"

	"github.com/shardmesh/shardmesh/config/value"
	"github.com/shardmesh/shardmesh/internal/suggest"
)

// Sources are what override the defaults, in increasing precedence: the file, the
// environment, then flags.
type Sources struct {
	// File is the config file (.yaml, .yml, .toml or .json); empty for none.
	File string
	// LookupEnv reads the environment (os.LookupEnv); nil for none.
	LookupEnv func(string) (string, bool)
	// Flags are key=value overrides from the command line (--set and the dedicated flags),
	// applied in order.
	Flags []string
}

// Load builds the configuration from the defaults and the sources. All problems are reported
// at once, each naming the key, the value, where it came from and what is allowed.
func Load(src Sources) (Config, error) {
	c := Default()
	var errs []error
	if src.File != "" {
		tree, err := readFile(src.File)
		if err != nil {
			return c, err
		}
		errs = append(errs, apply(&c, tree, "", src.File)...)
	}
	if src.LookupEnv != nil {
		for _, k := range Schema {
			if v, ok := src.LookupEnv(k.Env()); ok {
				errs = append(errs, c.setKey(k, v, "environment "+k.Env()))
			}
		}
	}
	for _, f := range src.Flags {
		path, v, ok := strings.Cut(f, "=")
		if !ok {
			errs = append(errs, fmt.Errorf("--set %s: expected key=value, e.g. --set cluster.split-brain-resolver.stable-after=5s", f))
			continue
		}
		k, ok := lookup(path)
		if !ok {
			errs = append(errs, unknownKey(path, "flag --set"))
			continue
		}
		errs = append(errs, c.setKey(k, v, "flag"))
	}
	if _, err := PeerIDs("allow-peers", c.Node.AllowPeers); err != nil {
		errs = append(errs, err)
	}
	if _, err := PeerIDs("admin-allow", c.Node.AdminAllow); err != nil {
		errs = append(errs, err)
	}
	errs = append(errs, checkJoinAddrs(c.Node.Join)...)
	if _, err := PeerIDs("cluster-authority", c.Node.ClusterAuthority); err != nil {
		errs = append(errs, err)
	}
	if _, err := Networks("operator-networks", c.Node.OperatorNetworks); err != nil {
		errs = append(errs, err)
	}
	if err := checkJoinDNS(&c); err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return c, err
	}
	if err := c.Membership.Validate(); err != nil {
		return c, fmt.Errorf("cluster settings: %w", err)
	}
	if err := c.loadPassivation(); err != nil {
		return c, err
	}
	if err := c.Sharding.LeastShard.Validate(); err != nil {
		return c, fmt.Errorf("sharding settings: %w", err)
	}
	if err := c.Sharding.ConsistentHashing.Validate(); err != nil {
		return c, fmt.Errorf("sharding settings: %w", err)
	}
	if err := c.Sharding.Remember.Adaptive.Validate(); err != nil {
		return c, fmt.Errorf("sharding settings: %w", err)
	}
	c.Membership.JoinChecks = JoinChecks(c)
	return c, nil
}

// JoinChecks are the settings every member of a cluster must share; a member whose values
// differ is refused at join. number-of-shards maps entities to shards; the acceptable
// heartbeat pause is both how long a member's majority lease lasts and how long the others'
// failure detectors wait before marking it unreachable, which the removal of a Down member
// relies on.
func JoinChecks(c Config) map[string]string {
	m := c.Membership
	_ = m.Validate() // fills in the defaults of a copy: the values in effect; errors come from Load
	return map[string]string{
		"sharding.number-of-shards":                           strconv.Itoa(c.Sharding.NumberOfShards),
		"cluster.failure-detector.acceptable-heartbeat-pause": m.FailureDetector.AcceptableHeartbeatPause.String(),
	}
}

// readFile decodes a config file into a tree of maps.
func readFile(path string) (map[string]any, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read config: %w", err)
	}
	tree := map[string]any{}
	switch ext := strings.ToLower(filepath.Ext(path)); ext {
	case ".yaml", ".yml", ".json":
		if err := yaml.Unmarshal(data, &tree); err != nil {
			return nil, fmt.Errorf("config %s is not valid YAML: %w", path, err)
		}
	case ".toml":
		if _, err := toml.Decode(string(data), &tree); err != nil {
			return nil, fmt.Errorf("config %s is not valid TOML: %w", path, err)
		}
	default:
		return nil, fmt.Errorf("config %s: unknown format %q: use a .yaml, .yml, .toml or .json file", path, ext)
	}
	return tree, nil
}

// apply sets every leaf of tree, prefixed by prefix.
func apply(c *Config, tree map[string]any, prefix, source string) []error {
	var errs []error
	keys := make([]string, 0, len(tree))
	for k := range tree {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, name := range keys {
		path := prefix + name
		raw := tree[name]
		if k, ok := lookup(path); ok {
			errs = append(errs, c.setKey(k, raw, source))
			continue
		}
		if sub, ok := raw.(map[string]any); ok && isSection(path) {
			errs = append(errs, apply(c, sub, path+".", source)...)
			continue
		}
		errs = append(errs, unknownKey(path, source))
	}
	return errs
}

// isSection reports whether some key lies below path.
func isSection(path string) bool {
	if path+"." == roleMinPrefix || strings.HasPrefix(path+".", roleMinPrefix) {
		return true
	}
	for _, k := range Schema {
		if strings.HasPrefix(k.Path, path+".") {
			return true
		}
	}
	return false
}

// setKey sets key k to raw, read from source, and records where its value came from.
func (c *Config) setKey(k Key, raw any, source string) error {
	if err := k.set(c, raw); err != nil {
		return withSource(err, source)
	}
	if c.origins == nil {
		c.origins = map[string]origin{}
	}
	c.origins[k.Path] = origin{source: source, raw: raw}
	return nil
}

// origin is where a key's value came from, and the value as written there.
type origin struct {
	source string
	raw    any
}

// Origin says where the value of the key at path came from: the config file's name,
// "environment SHARDMESH_…", "flag", or "default".
func (c Config) Origin(path string) string {
	if o, ok := c.origins[path]; ok {
		return o.source
	}
	return "default"
}

func withSource(err error, source string) error {
	var ve *value.Error
	if errors.As(err, &ve) && ve.Source == "" {
		ve.Source = source
	}
	return err
}

// unknownKey explains an unknown key and suggests the closest known one.
func unknownKey(path, source string) error {
	if why := pekkoReason(path); why != "" {
		return fmt.Errorf("key %q (%s) is Pekko's and has no meaning in shardmesh: %s (docs/configuration.md)", path, source, why)
	}
	msg := fmt.Sprintf("unknown key %q (%s)", path, source)
	if hint := suggest.DidYouMean(path, knownNames()); hint != "" {
		msg += hint
	} else {
		msg += "; `sharddaemon config` lists every key"
	}
	return errors.New(msg)
}

// knownNames lists every key and every section (a prefix of keys).
func knownNames() []string {
	seen := map[string]bool{}
	var names []string
	for _, k := range Schema {
		parts := strings.Split(k.Path, ".")
		for i := 1; i <= len(parts); i++ {
			if n := strings.Join(parts[:i], "."); !seen[n] {
				seen[n] = true
				names = append(names, n)
			}
		}
	}
	return names
}
