package remember

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/dgraph-io/badger/v4"
	"github.com/libp2p/go-libp2p/core/protocol"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/shardmesh/shardmesh/p2p"
	"github.com/shardmesh/shardmesh/wire"
)

// Protocol is the libp2p protocol of the replica protocol.
const Protocol protocol.ID = "/shardmesh/replica/1"

// Defaults of Config.
const (
	// DefaultAntiEntropyInterval: how often a replica compares digests with a random other.
	DefaultAntiEntropyInterval = 5 * time.Second
	// DefaultTimeout: how long a round (a batch of writes, a read, a scan) waits for its
	// quorum.
	DefaultTimeout = 3 * time.Second
)

// Limits of what the store accepts.
const (
	// MaxKeySize is the longest key, in bytes.
	MaxKeySize = wire.MaxReplicaKeyLen
	// MaxValueSize is the largest value, in bytes.
	MaxValueSize = 1 << 20
	// MaxWriteBytes bounds one Write call: its keys and values together, in bytes.
	MaxWriteBytes = 2 << 20
	// MaxWrites bounds how many writes one Write call may carry.
	MaxWrites = 65536
)

// Small Badger sizes for the store's directory (Badger's own defaults take ~300 MB of RSS
// and a 2 GiB sparse value log per database). Values up to MaxValueSize stay in the LSM
// tree; the value log holds nothing in practice.
const (
	// DefaultMemTableSize: 8 MiB per memtable, 2 memtables. Badger commits at most 15% of
	// it (1.2 MiB) per transaction; the store's WriteBatch splits larger commits.
	DefaultMemTableSize = 8 << 20
	// DefaultValueLogFileSize: 16 MiB value log files (Badger: 1 GiB).
	DefaultValueLogFileSize = 16 << 20
	// DefaultBlockCacheSize: 8 MiB block cache (Badger: 256 MiB).
	DefaultBlockCacheSize = 8 << 20
)

// Config configures a Store. Zero fields take the defaults above.
type Config struct {
	// Dir is the Badger directory (the daemon passes <data-dir>/store). Required; created
	// if missing.
	Dir string

	// Host is the member's libp2p host: the store serves Protocol on it (replacing any
	// other handler) and sends its frames through it. Required.
	Host *p2p.Host

	// Placement returns the members as they are now (NewPlacement over the members that
	// may hold replicas: not leaving, down or removed): which hold the metadata, which may
	// hold a shard's records. It is called before every batch of calls the store takes up;
	// return the same pointer while the members do not change. Nil, or a nil result: this
	// member holds everything alone. Required.
	Placement func() *Placement

	// Layout maps keys to units (the shards' records and the metadata); nil: every key is
	// metadata.
	Layout Layout

	// MaxMoves bounds the moves of replica sets this member runs at once as the host of
	// their shards (sharding.store.max-simultaneous-moves). 0: DefaultMaxMoves.
	MaxMoves int

	// AntiEntropyInterval: how often the store compares digests with a random other member
	// and exchanges what differs. 0: DefaultAntiEntropyInterval (5 s); negative: never.
	AntiEntropyInterval time.Duration

	// Timeout bounds each round: a batch of writes, a read, a scan. 0: DefaultTimeout (3 s).
	Timeout time.Duration

	// Logger receives the store's logs (and Badger's warnings and errors). Default: discard.
	Logger *slog.Logger

	// Badger, when set, adjusts the Badger options after the store's (small) defaults:
	// DefaultMemTableSize, DefaultValueLogFileSize, DefaultBlockCacheSize, synchronous
	// writes. Keep SyncWrites on: a write is acknowledged once it is on disk.
	Badger func(badger.Options) badger.Options

	// Metrics, when set, receives the store's Prometheus metrics (call latencies, batch
	// sizes, its counters). Nil: none are recorded.
	Metrics prometheus.Registerer

	// MinFreeSpace is the reserve of free space, in bytes, kept on Dir's file system
	// (store.min-free-space): a local commit that would leave less is refused with a
	// *DiskFullError (errors.Is ErrDiskFull), and writes resume by themselves once space is
	// back (see diskspace.go). 0: DefaultMinFreeSpace (256 MiB); NoMinFreeSpace: none.
	MinFreeSpace int64

	// RefillMarker is a file whose presence makes the replica refill from its peers before
	// its answers count in reads (refill.go): `shardctl data rebuild` writes it next to a
	// store it moved aside, the store writes it when it finds far fewer keys than a peer,
	// and removes it once refilled. Empty: a refill does not survive a restart.
	RefillMarker string

	// MetaSeedMarker is a file whose presence says the metadata on this store's disk is in
	// no metadata group yet: `shardctl data restore` and the upgrade from a release before
	// the group write it; the store merges that metadata into the group (founding the
	// group with it as the oldest voter, when there is none) and then removes the file.
	// Empty: no seed.
	MetaSeedMarker string

	// Returning says the member ran before with this store (it is not new): once a peer
	// answers, the store compares how many keys it opened with to what the peer holds, and
	// refills when it holds far fewer (refill.go). A new member's empty store is not
	// compared.
	Returning bool

	// Broken, when set, is told (once, on a goroutine of its own) that the store broke: one
	// of its goroutines panicked (panics.go). The store answers nothing reliably after it;
	// its owner should stop. Nil: the store only logs it.
	Broken func(error)
	// MetaTick is the metadata group's clock unit: its leader heartbeats every tick and a
	// follower that hears nothing for 10–20 ticks calls an election. 0: 100 ms.
	MetaTick time.Duration

	// Admitted, when set, returns the members that may send replica frames now: the
	// admitted members of the current membership (Joining, WeaklyUp, Up, Leaving, Exiting;
	// not Down or Removed), by the text form of their peer ids; this member always may. The machine
	// drops the frames of any other peer — requests, repairs and answers alike — after
	// letting them wait a moment for their sender to be admitted (MachineConfig.Gated). It is
	// called before every batch the store takes up: return the same slice while they do not
	// change. Nil: every peer that reaches the host may.
	Admitted func() []NodeID

	// Refused, when set, is told (on the store's loop: keep it quick) of each frame dropped
	// because its sender is not an admitted member, to count and log it.
	Refused func(from NodeID)

	// Landed, when set, is told (on the store's loop: keep it quick, and do not call the
	// store from it) of records other members wrote that reached this member's disk in units
	// it hosts (Ready.Landed).
	Landed func(keys []string)
}

// validate checks the configuration; the machine's part is checked (and its defaults
// filled) by machine.
func (c *Config) validate() error {
	var errs []error
	if c.Dir == "" {
		errs = append(errs, configError("Dir", "required"))
	}
	if c.Host == nil {
		errs = append(errs, configError("Host", "required"))
	}
	if c.Placement == nil {
		errs = append(errs, configError("Placement", "required"))
	}
	mc := c.machine("self")
	errs = append(errs, mc.validate()...)
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	switch {
	case c.MinFreeSpace == 0:
		c.MinFreeSpace = DefaultMinFreeSpace
	case c.MinFreeSpace < 0 && c.MinFreeSpace != NoMinFreeSpace:
		errs = append(errs, configError("MinFreeSpace", "%d, want >= 0 or NoMinFreeSpace", c.MinFreeSpace))
	}
	if len(errs) > 0 {
		return fmt.Errorf("remember config: %w", errors.Join(errs...))
	}
	return nil
}

// machine returns the machine's part of the configuration, for member self (not yet
// validated).
func (c *Config) machine(self NodeID) MachineConfig {
	return MachineConfig{
		Self:                self,
		Layout:              c.Layout,
		MaxMoves:            c.MaxMoves,
		AntiEntropyInterval: c.AntiEntropyInterval,
		Timeout:             c.Timeout,
		MetaTick:            c.MetaTick,
		Gated:               c.Admitted != nil,
	}
}

// configError is an error about the Config field name.
func configError(name, format string, args ...any) error {
	return fmt.Errorf("%s: %s", name, fmt.Sprintf(format, args...))
}

// badgerOptions returns the store's Badger options for dir.
func badgerOptions(dir string, log *slog.Logger, tune func(badger.Options) badger.Options) badger.Options {
	opt := badger.DefaultOptions(dir).
		WithSyncWrites(true).
		WithMemTableSize(DefaultMemTableSize).
		WithNumMemtables(2).
		WithNumLevelZeroTables(2).
		WithNumLevelZeroTablesStall(8).
		WithValueLogFileSize(DefaultValueLogFileSize).
		WithBlockCacheSize(DefaultBlockCacheSize).
		WithNumCompactors(2).
		WithNumGoroutines(2).
		WithMetricsEnabled(false).
		// The store's single committer serialises writes; Badger's conflict detection
		// would only cost.
		WithDetectConflicts(false).
		WithLogger(badgerLogger{log.With("component", "badger")})
	if tune != nil {
		opt = tune(opt)
	}
	return opt
}

// badgerLogger passes Badger's warnings and errors to slog and drops its chatter.
type badgerLogger struct{ log *slog.Logger }

func (l badgerLogger) Errorf(f string, args ...any) {
	l.log.Error(strings.TrimSpace(fmt.Sprintf(f, args...)))
}

func (l badgerLogger) Warningf(f string, args ...any) {
	l.log.Warn(strings.TrimSpace(fmt.Sprintf(f, args...)))
}

func (badgerLogger) Infof(string, ...any)  {}
func (badgerLogger) Debugf(string, ...any) {}
