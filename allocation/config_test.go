package allocation

import (
	"math"
	"strings"
	"testing"
)

func TestLeastShardConfigValidate(t *testing.T) {
	tests := []struct {
		name    string
		cfg     LeastShardConfig
		want    LeastShardConfig // after Validate, when valid
		wantErr []string         // substrings of the error, when not
	}{
		{name: "zero is reference.conf", cfg: LeastShardConfig{}, want: DefaultLeastShardConfig()},
		{name: "defaults are valid", cfg: DefaultLeastShardConfig(), want: DefaultLeastShardConfig()},
		{name: "new algorithm keeps its values",
			cfg:  LeastShardConfig{RebalanceAbsoluteLimit: 20, RebalanceRelativeLimit: 1, SkipDifferenceOfOne: true},
			want: LeastShardConfig{RebalanceAbsoluteLimit: 20, RebalanceRelativeLimit: 1, RebalanceThreshold: 1, MaxSimultaneousRebalance: 3, SkipDifferenceOfOne: true}},
		{name: "negative absolute limit", cfg: LeastShardConfig{RebalanceAbsoluteLimit: -1},
			wantErr: []string{"least-shard-allocation-strategy.rebalance-absolute-limit = -1"}},
		{name: "relative limit above one", cfg: LeastShardConfig{RebalanceRelativeLimit: 1.5},
			wantErr: []string{"least-shard-allocation-strategy.rebalance-relative-limit = 1.5"}},
		{name: "negative relative limit", cfg: LeastShardConfig{RebalanceRelativeLimit: -0.1},
			wantErr: []string{"rebalance-relative-limit = -0.1"}},
		{name: "NaN relative limit", cfg: LeastShardConfig{RebalanceRelativeLimit: math.NaN()},
			wantErr: []string{"rebalance-relative-limit = NaN"}},
		{name: "every bad key named", cfg: LeastShardConfig{RebalanceThreshold: -2, MaxSimultaneousRebalance: -3},
			wantErr: []string{"least-shard-allocation-strategy.rebalance-threshold = -2", "least-shard-allocation-strategy.max-simultaneous-rebalance = -3"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := tt.cfg
			err := cfg.Validate()
			if tt.wantErr == nil {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				if cfg != tt.want {
					t.Fatalf("after Validate: %+v, want %+v", cfg, tt.want)
				}
				if _, err := NewLeastShard(tt.cfg); err != nil {
					t.Fatalf("NewLeastShard: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Validate accepted %+v", tt.cfg)
			}
			for _, w := range tt.wantErr {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
			if _, err := NewLeastShard(tt.cfg); err == nil {
				t.Errorf("NewLeastShard accepted %+v", tt.cfg)
			}
		})
	}
}

func TestConsistentHashingConfigValidate(t *testing.T) {
	cfg := ConsistentHashingConfig{}
	if err := cfg.Validate(); err != nil || cfg != DefaultConsistentHashingConfig() {
		t.Fatalf("zero config: %+v, %v; want the defaults", cfg, err)
	}
	for _, bad := range []struct {
		cfg  ConsistentHashingConfig
		want string
	}{
		{ConsistentHashingConfig{RebalanceLimit: -1}, "consistent-hashing-allocation-strategy.rebalance-limit = -1"},
		{ConsistentHashingConfig{VirtualNodes: -5}, "consistent-hashing-allocation-strategy.virtual-nodes-factor = -5"},
		{ConsistentHashingConfig{VirtualNodes: maxVirtualNodes + 1}, "virtual-nodes-factor = 10001"},
	} {
		c := bad.cfg
		err := c.Validate()
		if err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("Validate(%+v) = %v, want an error saying %q", bad.cfg, err, bad.want)
		}
		if _, err := NewConsistentHashing(bad.cfg); err == nil {
			t.Errorf("NewConsistentHashing accepted %+v", bad.cfg)
		}
	}
}

// The algorithm follows rebalance-absolute-limit, as in Akka.
func TestLeastShardAlgorithmChoice(t *testing.T) {
	// [4, 4, 0]: the new algorithm picks one from each, the old (threshold 1) one only.
	if got := newLeastShard(t, LeastShardConfig{}).Rebalance(abc(4, 4, 0)); len(got) != 1 {
		t.Errorf("absolute-limit 0 (old): Rebalance = %v, want one shard", got)
	}
	if got := newLeastShard(t, LeastShardConfig{RebalanceAbsoluteLimit: 20, RebalanceRelativeLimit: 1}).Rebalance(abc(4, 4, 0)); len(got) != 2 {
		t.Errorf("absolute-limit 20 (new): Rebalance = %v, want two shards", got)
	}
	for _, s := range []LeastShard{newLeastShard(t, LeastShardConfig{}), unlimited(t)} {
		if !strings.HasPrefix(s.String(), "LeastShard(") {
			t.Errorf("String() = %q", s.String())
		}
	}
}
