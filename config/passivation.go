package config

import (
	"errors"
	"maps"
	"slices"
	"strings"

	"github.com/shardmesh/shardmesh/config/value"
	"github.com/shardmesh/shardmesh/passivation"
)

// The sharding.passivation block holds strategy blocks of the user's own naming, read by
// package passivation, which knows reference.conf's strategies and checks every key. Here
// the block's keys are only gathered, flattened to dotted keys, so a flag or environment
// variable overrides a single key of a file's block.
const passivationBlock = "sharding.passivation"

// passivationKey is a documented key of the block (it gets a usage line and an environment
// variable).
func passivationKey(path, usage string) Key {
	k, _ := anyPassivationKey(path)
	k.Usage = usage
	if path == passivationBlock+".strategy" {
		k.get = func(c *Config) any { return c.Sharding.Passivation.Strategy }
	}
	return k
}

// anyPassivationKey accepts every key below the block.
func anyPassivationKey(path string) (Key, bool) {
	rel, ok := strings.CutPrefix(path, passivationBlock+".")
	if !ok || rel == "" {
		return Key{}, false
	}
	return Key{Path: path, set: func(c *Config, raw any) error {
		c.setPassivation(rel, raw)
		return nil
	}}, true
}

// setPassivation records key rel of the block; a block value is recorded leaf by leaf.
func (c *Config) setPassivation(rel string, raw any) {
	if m, ok := raw.(map[string]any); ok {
		for _, k := range slices.Sorted(maps.Keys(m)) {
			c.setPassivation(rel+"."+k, m[k])
		}
		return
	}
	if c.passivation == nil {
		c.passivation = map[string]any{}
	}
	// A key set again replaces its earlier value and everything that was below it.
	for k := range c.passivation {
		if strings.HasPrefix(k, rel+".") {
			delete(c.passivation, k)
		}
	}
	c.passivation[rel] = raw
}

// loadPassivation turns the gathered keys into the settings.
func (c *Config) loadPassivation() error {
	s, err := passivation.Parse(c.passivation)
	c.passivation = nil
	var ve *value.Error
	if errors.As(err, &ve) && strings.HasPrefix(ve.Key, "passivation") {
		ve.Key = "sharding." + ve.Key
	}
	if err != nil {
		return err
	}
	c.Sharding.Passivation = s
	return nil
}
