package sim

import (
	"flag"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"

	"github.com/shardmesh/shardmesh/allocation"
	"github.com/shardmesh/shardmesh/coordinator"
	"github.com/shardmesh/shardmesh/engine"
	"github.com/shardmesh/shardmesh/membership"
	"github.com/shardmesh/shardmesh/shard"
)

var _ = flag.Bool("rewrite-hint", false, "use -rewrite (datadriven) to regenerate testdata")

// TestScenarios runs the scenario scripts in testdata/. Regenerate their expected output
// with: go test ./internal/sim -run TestScenarios -rewrite
func TestScenarios(t *testing.T) {
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		var s *Sim
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			out, err := runCommand(t, &s, d)
			if err != nil {
				d.Fatalf(t, "%s: %v", d.Pos, err)
			}
			if s != nil && s.Err() != nil {
				t.Fatalf("%s: invariant violated: %v\ntimeline:\n%s", d.Pos, s.Err(), strings.Join(s.Timeline(), "\n"))
			}
			return out
		})
	})
}

func runCommand(t *testing.T, sp **Sim, d *datadriven.TestData) (string, error) {
	args := map[string]string{}
	for _, a := range d.CmdArgs {
		args[a.Key] = strings.Join(a.Vals, ",")
	}
	dur := func(key string, def time.Duration) time.Duration {
		if v, ok := args[key]; ok {
			x, err := time.ParseDuration(v)
			if err != nil {
				d.Fatalf(t, "%s=%s: %v", key, v, err)
			}
			return x
		}
		return def
	}
	num := func(key string, def int) int {
		if v, ok := args[key]; ok {
			x, err := strconv.Atoi(v)
			if err != nil {
				d.Fatalf(t, "%s=%s: %v", key, v, err)
			}
			return x
		}
		return def
	}
	list := func(key string) []int {
		var out []int
		for _, f := range strings.FieldsFunc(args[key], func(r rune) bool { return r == ',' }) {
			x, err := strconv.Atoi(f)
			if err != nil {
				d.Fatalf(t, "%s=%s: %v", key, args[key], err)
			}
			out = append(out, x)
		}
		return out
	}
	if d.Cmd != "cluster" && *sp == nil {
		return "", fmt.Errorf("no cluster: start with `cluster`")
	}
	s := *sp
	switch d.Cmd {
	case "cluster":
		cfg := membership.DefaultConfig()
		cfg.SplitBrainResolver.StableAfter = dur("stable-after", 5*time.Second)
		if v, ok := args["strategy"]; ok {
			cfg.SplitBrainResolver.ActiveStrategy = membership.Strategy(v)
		}
		cfg.SplitBrainResolver.QuorumSize = num("quorum", 0)
		cfg.MinNrOfMembers = num("min-nr", 1)
		cfg.Voters = num("voters", 0)
		if v, ok := args["weakly-up"]; ok {
			cfg.AllowWeaklyUpMembers = offOr(dur, v, "weakly-up")
		}
		if v, ok := args["unstable"]; ok {
			cfg.SplitBrainResolver.DownAllWhenUnstable = offOr(dur, v, "unstable")
		}
		opts := Options{Seed: uint64(num("seed", 1)), Membership: cfg, NumberOfShards: num("shards", 30),
			Durable: args["durable"] == "true", AntiEntropyInterval: dur("anti-entropy", 0)}
		if typ, ok := args["type"]; ok {
			opts.Types = []engine.TypeConfig{testType(typ, num("min-nr", 1))}
		}
		s = New(opts)
		*sp = s
		for range num("nodes", 3) {
			s.AddNode(nil, "1.0.0")
		}
		s.Start(1)
		for i := 2; i <= num("nodes", 3); i++ {
			s.Start(i, 1)
		}
		return "", nil
	case "add":
		n := s.AddNode(strings.Split(args["roles"], ","), membership.Version(args["version"]))
		return string(n.ID) + "\n", nil
	case "start":
		for len(s.Nodes()) < num("node", 0) {
			s.AddNode(nil, "1.0.0")
		}
		s.Start(num("node", 0), list("seeds")...)
	case "restart":
		s.Start(num("node", 0), list("seeds")...)
	case "run":
		s.RunFor(dur("for", time.Second))
	case "await-converged":
		if !s.RunUntil(s.Converged, dur("within", 10*time.Second)) {
			return "not converged\n" + s.Status(), nil
		}
		return "converged\n", nil
	case "members":
		return s.Describe(num("node", 1)), nil
	case "status":
		return s.Status(), nil
	case "partition":
		s.logf("partition %s", args["groups"])
		s.Net.Partition(groups(args["groups"])...)
	case "partition-at":
		// partition-at action=up node=6 groups=1-2-6-7/3-4-5: the partition falls at the
		// instant a leader moves node 6 Up, before its gossip of the change leaves.
		action, err := ParseLeaderAction(args["action"])
		if err != nil {
			return "", err
		}
		for len(s.Nodes()) < num("node", 0) {
			s.AddNode(nil, "1.0.0")
		}
		s.PartitionAtLeaderAction(action, num("node", 0), groups(args["groups"])...)
	case "await-fired":
		if !s.RunUntil(s.Fired, dur("within", 10*time.Second)) {
			return "not fired\n", nil
		}
		return "fired\n", nil
	case "cut-lease":
		// cut-lease nodes=1,2,3: the resolver's lease is out of their reach (lease-majority).
		s.CutResolverLease(list("nodes")...)
	case "heal":
		s.logf("heal")
		s.Net.Heal()
	case "kill":
		s.Kill(num("node", 0))
	case "pause":
		s.Pause(num("node", 0))
	case "resume":
		s.Resume(num("node", 0))
	case "leave":
		s.Leave(num("node", 0))
	case "down":
		s.Down(num("by", 1), num("node", 0))
	case "send":
		from, n := num("from", 1), num("entities", 1)
		for i := range n {
			s.Send(from, args["type"], shard.EntityID(fmt.Sprintf("e%d", i)))
		}
	case "await-handled":
		// Every message sent so far is handled (for durable counters: its increment saved).
		if !s.RunUntil(func() bool {
			for _, f := range s.traffic.fates {
				if f != handled {
					return false
				}
			}
			return true
		}, dur("within", 10*time.Second)) {
			return "not handled\n" + s.TrafficReport(), nil
		}
		return "handled\n", nil
	case "check-counters":
		if err := s.CheckCounters(); err != nil {
			return err.Error() + "\n", nil
		}
		return "counters ok\n", nil
	case "kill-all":
		for _, n := range s.Nodes() {
			if n.Alive {
				s.Kill(n.Index)
			}
		}
	case "shards":
		return s.DescribeShards(args["type"]), nil
	case "spread":
		return fmt.Sprintf("spread %d\n", s.Spread(args["type"])), nil
	case "traffic":
		return s.TrafficReport(), nil
	case "unaccounted":
		return fmt.Sprintf("%d unaccounted\n", len(s.unaccounted())), nil
	case "check-one-side":
		if err := s.RunningSidesConnected(); err != nil {
			return err.Error() + "\n", nil
		}
		return "ok\n", nil
	case "timeline":
		return strings.Join(s.Timeline(), "\n") + "\n", nil
	default:
		return "", fmt.Errorf("unknown command %q", d.Cmd)
	}
	return "", nil
}

// offOr reads "off" (membership.Off) or a duration for key.
func offOr(dur func(string, time.Duration) time.Duration, v, key string) time.Duration {
	if v == "off" {
		return membership.Off
	}
	return dur(key, 0)
}

// groups parses partition groups: 1-2-3/4-5.
func groups(spec string) [][]int {
	var out [][]int
	for _, g := range strings.Split(spec, "/") {
		var nodes []int
		for _, f := range strings.Split(g, "-") {
			x, _ := strconv.Atoi(f)
			nodes = append(nodes, x)
		}
		out = append(out, nodes)
	}
	return out
}

// testType configures an entity type with Akka's new rebalance algorithm.
func testType(name string, minMembers int) engine.TypeConfig {
	cc := coordinator.DefaultConfig(name)
	cc.MinMembers = minMembers
	lc := allocation.DefaultLeastShardConfig()
	lc.RebalanceAbsoluteLimit = 1000
	lc.RebalanceRelativeLimit = 1 // limits never bind: balance within two rounds
	strategy, err := allocation.NewLeastShard(lc)
	if err != nil {
		panic(err)
	}
	cc.Strategy = strategy
	return engine.TypeConfig{Name: name, Coordinator: cc}
}
