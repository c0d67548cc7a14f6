package config

import (
	"fmt"
	"maps"
	"slices"

	"github.com/shardmesh/shardmesh/config/value"
)

// Setting is one key's value in effect and where it came from (sharddaemon config show).
type Setting struct {
	// Key is the dotted key.
	Key string `json:"key"`
	// Value is the value in effect, written as a config file would ("5s", "[a, b]",
	// quoted strings); empty for a key of a block that was not set.
	Value string `json:"value"`
	// Origin is the file, "environment SHARDMESH_…", "flag" or "default".
	Origin string `json:"origin"`
}

// Settings lists every key of the schema with its value in effect and its origin, in the
// documented order, then the keys with a name of the user's (cluster.role.<role>.*, strategy
// blocks under sharding.passivation) that a source set. c must come from Load.
func (c Config) Settings() []Setting {
	out := make([]Setting, 0, len(Schema)+len(c.origins))
	listed := map[string]bool{}
	for _, k := range Schema {
		listed[k.Path] = true
		s := Setting{Key: k.Path, Origin: c.Origin(k.Path)}
		switch {
		case k.get != nil:
			s.Value = format(k.get(&c))
		case c.origins[k.Path].source != "":
			s.Value = format(c.origins[k.Path].raw)
		}
		out = append(out, s)
	}
	for _, path := range slices.Sorted(maps.Keys(c.origins)) {
		if !listed[path] {
			o := c.origins[path]
			out = append(out, Setting{Key: path, Value: format(o.raw), Origin: o.source})
		}
	}
	return out
}

// format writes a value as a config file would.
func format(v any) string {
	switch x := v.(type) {
	case []string:
		items := make([]any, len(x))
		for i, s := range x {
			items[i] = s
		}
		return value.Format(items)
	case bool:
		return map[bool]string{true: "on", false: "off"}[x]
	case int, int64, uint64:
		return fmt.Sprint(x)
	}
	return value.Format(v)
}
