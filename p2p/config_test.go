package p2p

import (
	"strings"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
)

func TestConfigValidateDefaults(t *testing.T) {
	cfg := Config{Identity: newKey(t)}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	if len(cfg.ListenAddrs) != 1 || cfg.ListenAddrs[0] != "/ip4/127.0.0.1/tcp/0" {
		t.Errorf("ListenAddrs = %v", cfg.ListenAddrs)
	}
	if cfg.MaxFrameSize != 4<<20 || cfg.SendQueue != 65536 || cfg.SendQueueBytes != 64<<20 ||
		cfg.WriteTimeout != 30*time.Second || cfg.GossipQueue != 2048 || cfg.MDNSTag != "shardmesh" || cfg.Logger == nil {
		t.Errorf("defaults not filled: %+v", cfg)
	}
	if d := DefaultConfig(); d.MaxFrameSize != cfg.MaxFrameSize || d.Identity != nil {
		t.Errorf("DefaultConfig = %+v", d)
	}
}

func TestConfigValidateRejects(t *testing.T) {
	tests := []struct {
		field     string
		configure func(*Config)
	}{
		{"Identity", func(c *Config) { c.Identity = nil }},
		{"ListenAddrs[0]", func(c *Config) { c.ListenAddrs = []string{"127.0.0.1:4000"} }},
		{"ListenAddrs[1]", func(c *Config) { c.ListenAddrs = []string{"/ip4/127.0.0.1/tcp/0", "/ip4/127.0.0.1/udp/0/quic-v1"} }},
		{"ListenAddrs[0]", func(c *Config) { c.ListenAddrs = []string{"/ip4/127.0.0.1/tcp/0/ws"} }},
		{"ClusterKey", func(c *Config) { c.ClusterKey = []byte("short") }},
		{"AllowPeers[0]", func(c *Config) { c.AllowPeers = []peer.ID{""} }},
		{"MaxFrameSize", func(c *Config) { c.MaxFrameSize = -1 }},
		{"MaxFrameSize", func(c *Config) { c.MaxFrameSize = 2 << 30 }},
		{"SendQueue", func(c *Config) { c.SendQueue = -5 }},
		{"SendQueueBytes", func(c *Config) { c.MaxFrameSize = 1 << 20; c.SendQueueBytes = 1 << 10 }},
		{"WriteTimeout", func(c *Config) { c.WriteTimeout = -time.Second }},
		{"GossipQueue", func(c *Config) { c.GossipQueue = -1 }},
	}
	for _, tt := range tests {
		cfg := Config{Identity: newKey(t)}
		tt.configure(&cfg)
		err := cfg.Validate()
		if err == nil || !strings.Contains(err.Error(), tt.field) {
			t.Errorf("%s: got %v, want an error naming the field", tt.field, err)
		}
	}
}
