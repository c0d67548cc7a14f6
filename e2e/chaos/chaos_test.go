package chaos

import (
	"flag"
	"os"
	"strings"
	"testing"
	"time"
)

// Flags of the long run (scripts/chaos passes them): go test ./e2e/chaos -run TestChaosLong
// -timeout 0 -args -chaos.duration 10m -chaos.seed 7.
var (
	flagDuration   = flag.Duration("chaos.duration", 0, "TestChaosLong: how long faults are injected (0 skips the long run)")
	flagSeed       = flag.Uint64("chaos.seed", 0, "seed of the faults and the load (0: from the clock, printed)")
	flagCounters   = flag.Int("chaos.counters", 10000, "TestChaosLong: counters the load increments")
	flagMembers    = flag.Int("chaos.members", 5, "TestChaosLong: members at the start")
	flagShards     = flag.Int("chaos.shards", 100, "TestChaosLong: sharding.number-of-shards")
	flagFaults     = flag.String("chaos.faults", "", "comma-separated fault kinds (default all: kill,pause,term,shutdown,join,partition)")
	flagPartitions = flag.String("chaos.partitions", "", "on: require network namespaces; off: no partitions; empty: when the machine allows")
	flagKeep       = flag.Bool("chaos.keep", false, "keep data directories, journals and logs (their directory is printed)")
	flagSet        = flag.String("chaos.set", "", "extra sharddaemon --set key=value pairs, comma-separated")
	flagKnown      = flag.String("chaos.known-bugs", "", "comma-separated known bugs reported without failing the run (empty: every violation fails)")
)

// seed is -chaos.seed, or a new one from the clock (printed, so a failure can be repeated).
func seed() uint64 {
	if *flagSeed != 0 {
		return *flagSeed
	}
	return uint64(time.Now().UnixNano())
}

func runChaos(t *testing.T, cfg Config) {
	t.Helper()
	repo, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	cfg.Bin = t.TempDir()
	if err := Build(repo, cfg.Bin); err != nil {
		t.Fatal(err)
	}
	// The run's directory is kept when asked or when the run fails (the logs say why).
	dir, err := os.MkdirTemp("", "shardmesh-chaos-")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Root = dir
	t.Cleanup(func() {
		if *flagKeep || t.Failed() {
			t.Logf("data directories, journals and logs kept in %s", dir)
			return
		}
		os.RemoveAll(dir)
	})
	if *flagFaults != "" {
		cfg.Faults = strings.Split(*flagFaults, ",")
	}
	if *flagPartitions != "" {
		cfg.Partitions = *flagPartitions
	}
	if *flagKnown != "" {
		cfg.KnownBugs = strings.Split(*flagKnown, ",")
	}
	if *flagSet != "" {
		for _, kv := range strings.Split(*flagSet, ",") {
			cfg.ExtraFlags = append(cfg.ExtraFlags, "--set", kv)
		}
	}
	cfg.Logf = t.Logf
	t.Logf("seed %d (repeat with -chaos.seed %d)", cfg.Seed, cfg.Seed)
	rep, err := Run(cfg)
	if err != nil {
		t.Fatalf("seed %d: %v", cfg.Seed, err)
	}
	if rep.Failed() {
		t.Fatalf("\n%s", rep)
	}
	t.Logf("\n%s", rep)
}

// TestChaosShort is the CI run: 5 members, 2,000 counters, 75 s of faults; about 2–3
// minutes in all.
func TestChaosShort(t *testing.T) {
	if testing.Short() {
		t.Skip("long: 5 real daemons under faults for minutes")
	}
	runChaos(t, Config{Seed: seed(), Duration: 75 * time.Second, Counters: 2000, Shards: 60, Workers: 12})
}

// TestChaosLong is the run by hand (scripts/chaos): -chaos.duration sets it going.
func TestChaosLong(t *testing.T) {
	if *flagDuration == 0 {
		t.Skip("set -chaos.duration (scripts/chaos --duration 10m)")
	}
	runChaos(t, Config{Seed: seed(), Duration: *flagDuration, Counters: *flagCounters, Members: *flagMembers, Shards: *flagShards})
}
