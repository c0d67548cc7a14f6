package membership

import (
	"errors"
	"fmt"
	"time"
)

// Config tunes membership. Keys and defaults follow Akka's akka.cluster section.
type Config struct {
	// MinNrOfMembers is how many members must have joined before the leader moves joining
	// members to Up (min-nr-of-members). Default 1.
	MinNrOfMembers int
	// RoleMinNrOfMembers is min-nr-of-members per role (role.<name>.min-nr-of-members).
	RoleMinNrOfMembers map[string]int
	// Voters is how many of the oldest Up members (with the split-brain resolver's role)
	// decide majorities (cluster.voters): they grant the serving lease, and keep-majority
	// keeps the side that holds most of them (voters.go). A member's cost of the lease is a
	// heartbeat to each voter, whatever the cluster's size. While the cluster has no more
	// Up members than this, every member votes, as in Akka. Default 5.
	Voters int
	// GossipInterval is how often the full state is re-broadcast while some member reports a
	// different digest (gossip-interval). Default 1 s.
	GossipInterval time.Duration
	// SeedNodeTimeout is how long to wait for an answer from the seeds before asking again
	// (seed-node-timeout). Default 5 s.
	SeedNodeTimeout time.Duration
	// FailureDetector configures phi-accrual failure detection.
	FailureDetector FailureDetectorConfig
	// SplitBrainResolver configures the downing of unreachable members.
	SplitBrainResolver SBRConfig
	// DownRemovalMargin is how long the leader keeps a Down member before removing it
	// (down-removal-margin), on top of what the majority lease needs (Node.leaseExpired), so
	// that the downed side has stopped before anything it ran starts elsewhere. Zero means
	// stable-after, as in Akka — except with keep-majority, where it means none: the side
	// keep-majority downs is never a majority, so the majority lease already stops it
	// (keep-oldest and static-quorum may down a majority, which keeps its lease until its
	// own resolver stops it, within stable-after).
	DownRemovalMargin time.Duration
	// AllowWeaklyUpMembers is how long a leader goes without convergence before it moves
	// Joining members it can reach to WeaklyUp (allow-weakly-up-members): they are members,
	// counted as Joining, and host nothing until the leader moves them Up at convergence.
	// Default 7 s, as in Akka; Off never.
	AllowWeaklyUpMembers time.Duration
	// ExitingTimeout is how long a member that is Exiting (it has handed everything off)
	// waits to be Removed by the leader before it stops anyway, as left
	// (coordinated-shutdown's cluster-exiting phase in Akka, whose timeout this is). When
	// every member leaves at once, the leader removes the others and itself and stops before
	// they hear it; without this they would wait for a leader that is gone. Default 10 s.
	ExitingTimeout time.Duration
	// JoinChecks are settings that must be equal on every member, e.g.
	// "sharding.number-of-shards" → "1000". A member joining with a different value is refused
	// with an error naming the key and both values.
	JoinChecks map[string]string
	// Credential is this member's credential, presented when it asks to join and when it
	// admits a member (package trust). Nil: none.
	Credential []byte
	// Admit, when set, decides admission: whether member node, presenting credential, may
	// join (asked of the member a join request reaches), and whether a member that admits
	// this one is itself admitted (asked of the joining member). It returns "" to admit, or
	// why not. It must depend only on its arguments. Nil: every member is admitted.
	Admit func(now time.Time, node NodeID, credential []byte) string
}

// FailureDetectorConfig configures the phi-accrual failure detector
// (akka.cluster.failure-detector).
type FailureDetectorConfig struct {
	// HeartbeatInterval is how often heartbeats are sent (heartbeat-interval). Default 1 s.
	HeartbeatInterval time.Duration
	// Threshold is the phi above which a member is unreachable (threshold). Default 8.
	Threshold float64
	// MaxSampleSize is the number of inter-arrival samples kept (max-sample-size). Default 1000.
	MaxSampleSize int
	// MinStdDeviation is the floor of the inter-arrival deviation (min-std-deviation). Default 100 ms.
	MinStdDeviation time.Duration
	// AcceptableHeartbeatPause is the pause tolerated before phi rises
	// (acceptable-heartbeat-pause). Default 3 s.
	AcceptableHeartbeatPause time.Duration
	// FirstHeartbeatEstimate bootstraps the inter-arrival distribution
	// (expected-response-after). Default 1 s.
	FirstHeartbeatEstimate time.Duration
	// MonitoredByNrOfMembers is how many members watch each member: the nearest on a ring
	// by node-id hash, half on either side (monitored-by-nr-of-members; topology.go).
	// Default 9, as in Akka.
	MonitoredByNrOfMembers int
}

// Strategy is a split-brain resolver strategy.
type Strategy string

// Split-brain resolver strategies (split-brain-resolver.active-strategy).
const (
	KeepMajority Strategy = "keep-majority" // the side with more members survives; ties go to the side with the lowest node id
	StaticQuorum Strategy = "static-quorum" // a side with at least QuorumSize members survives
	KeepOldest   Strategy = "keep-oldest"   // the side with the oldest member survives
	DownAllNodes Strategy = "down-all"      // every member is downed at any partition (down-all)
	DownOff      Strategy = "off"           // never down automatically (operators down by hand)
	// LeaseMajority: the side whose leader acquires the resolver's lease survives; the
	// minority by keep-majority's count waits acquire-lease-delay-for-minority before it
	// tries, so that the majority wins when it can (lease-majority).
	LeaseMajority Strategy = "lease-majority"
)

// Off turns off a setting that is on by default with a duration (down-all-when-unstable,
// allow-weakly-up-members).
const Off time.Duration = -1

// SBRConfig configures the split-brain resolver (akka.cluster.split-brain-resolver).
type SBRConfig struct {
	// ActiveStrategy is the strategy (active-strategy). Default keep-majority.
	ActiveStrategy Strategy
	// StableAfter is how long the set of unreachable members must stay unchanged before a
	// decision (stable-after). Default 20 s.
	StableAfter time.Duration
	// Role limits the members counted by the decision (keep-majority.role,
	// static-quorum.role, keep-oldest.role). Default "": all members.
	Role string
	// QuorumSize is the quorum of static-quorum (static-quorum.quorum-size).
	QuorumSize int
	// DownIfAlone: with keep-oldest, an oldest member alone on its side is downed and the
	// other side survives (keep-oldest.down-if-alone). Default on.
	DownIfAlone bool
	// DownAllWhenUnstable: when no decision was taken within stable-after plus this since
	// the first change of reachability (the unreachable members keep changing), every member
	// downs itself, as no side can be trusted to decide alike (down-all-when-unstable).
	// Default on: 3/4 of stable-after, at least 4 s, as in Akka; Off never.
	DownAllWhenUnstable time.Duration
	// LeaseMajority configures lease-majority.
	LeaseMajority LeaseMajorityConfig
}

// LeaseMajorityConfig configures lease-majority (split-brain-resolver.lease-majority).
type LeaseMajorityConfig struct {
	// LeaseImplementation names the lease: "store", the lease kept in the cluster's
	// replicated store (lease.StoreProvider), or a provider given to shardmesh.Start with
	// WithLease (lease-implementation). Default "store".
	LeaseImplementation string
	// LeaseName is the lease's name (lease-name). Default "<cluster-name>-shardmesh-sbr".
	LeaseName string
	// AcquireLeaseDelayForMinority is how long the side that keep-majority's count puts in
	// the minority waits before it tries to acquire the lease, so that the majority gets it
	// when it can (acquire-lease-delay-for-minority). Default 2 s.
	AcquireLeaseDelayForMinority time.Duration
	// ReleaseAfter is how long the lease is kept after the members a decision downed were
	// removed (release-after). Default 40 s.
	ReleaseAfter time.Duration
	// LeaseOperationTimeout bounds an acquisition: without an answer by then the decision is
	// reversed, as for a denial (akka.coordination.lease.lease-operation-timeout). It must be
	// less than down-removal-margin, so that a side that loses the lease has downed itself
	// before the other side removes it. Default 5 s, or half of down-removal-margin when
	// that is less.
	LeaseOperationTimeout time.Duration
}

// DefaultConfig returns Akka's defaults.
func DefaultConfig() Config {
	return Config{
		MinNrOfMembers:  1,
		Voters:          5,
		GossipInterval:  time.Second,
		SeedNodeTimeout: 5 * time.Second,
		ExitingTimeout:  10 * time.Second,
		FailureDetector: FailureDetectorConfig{
			HeartbeatInterval:        time.Second,
			Threshold:                8,
			MaxSampleSize:            1000,
			MinStdDeviation:          100 * time.Millisecond,
			AcceptableHeartbeatPause: 3 * time.Second,
			FirstHeartbeatEstimate:   time.Second,
			MonitoredByNrOfMembers:   9,
		},
		SplitBrainResolver: SBRConfig{
			ActiveStrategy: KeepMajority,
			StableAfter:    20 * time.Second,
			DownIfAlone:    true,
			LeaseMajority: LeaseMajorityConfig{
				LeaseImplementation:          "store",
				AcquireLeaseDelayForMinority: 2 * time.Second,
				ReleaseAfter:                 40 * time.Second,
				// LeaseOperationTimeout: 5 s, or half of down-removal-margin (Validate).
			},
		},
		AllowWeaklyUpMembers: 7 * time.Second,
	}
}

// Validate fills zero values with defaults and rejects nonsense, naming the setting.
func (c *Config) Validate() error {
	d := DefaultConfig()
	if c.MinNrOfMembers == 0 {
		c.MinNrOfMembers = d.MinNrOfMembers
	}
	if c.GossipInterval == 0 {
		c.GossipInterval = d.GossipInterval
	}
	if c.Voters == 0 {
		c.Voters = d.Voters
	}
	if c.SeedNodeTimeout == 0 {
		c.SeedNodeTimeout = d.SeedNodeTimeout
	}
	if c.ExitingTimeout == 0 {
		c.ExitingTimeout = d.ExitingTimeout
	}
	fd, dfd := &c.FailureDetector, d.FailureDetector
	if fd.HeartbeatInterval == 0 {
		fd.HeartbeatInterval = dfd.HeartbeatInterval
	}
	if fd.Threshold == 0 {
		fd.Threshold = dfd.Threshold
	}
	if fd.MaxSampleSize == 0 {
		fd.MaxSampleSize = dfd.MaxSampleSize
	}
	if fd.MinStdDeviation == 0 {
		fd.MinStdDeviation = dfd.MinStdDeviation
	}
	if fd.AcceptableHeartbeatPause == 0 {
		fd.AcceptableHeartbeatPause = dfd.AcceptableHeartbeatPause
	}
	if fd.FirstHeartbeatEstimate == 0 {
		fd.FirstHeartbeatEstimate = dfd.FirstHeartbeatEstimate
	}
	if fd.MonitoredByNrOfMembers == 0 {
		fd.MonitoredByNrOfMembers = dfd.MonitoredByNrOfMembers
	}
	sbr := &c.SplitBrainResolver
	if sbr.ActiveStrategy == "" {
		sbr.ActiveStrategy = KeepMajority
	}
	if sbr.StableAfter == 0 {
		sbr.StableAfter = d.SplitBrainResolver.StableAfter
	}
	if c.DownRemovalMargin == 0 && sbr.ActiveStrategy != KeepMajority {
		c.DownRemovalMargin = sbr.StableAfter
	}
	if sbr.DownAllWhenUnstable == 0 {
		sbr.DownAllWhenUnstable = max(4*time.Second, sbr.StableAfter*3/4)
	}
	if c.AllowWeaklyUpMembers == 0 {
		c.AllowWeaklyUpMembers = d.AllowWeaklyUpMembers
	}
	lm, dlm := &sbr.LeaseMajority, d.SplitBrainResolver.LeaseMajority
	if lm.LeaseImplementation == "" {
		lm.LeaseImplementation = dlm.LeaseImplementation
	}
	if lm.AcquireLeaseDelayForMinority == 0 {
		lm.AcquireLeaseDelayForMinority = dlm.AcquireLeaseDelayForMinority
	}
	if lm.ReleaseAfter == 0 {
		lm.ReleaseAfter = dlm.ReleaseAfter
	}
	if lm.LeaseOperationTimeout == 0 {
		lm.LeaseOperationTimeout = min(5*time.Second, c.DownRemovalMargin/2)
	}
	var errs []error
	check := func(ok bool, format string, args ...any) {
		if !ok {
			errs = append(errs, fmt.Errorf(format, args...))
		}
	}
	check(c.MinNrOfMembers >= 1, "min-nr-of-members = %d: must be at least 1", c.MinNrOfMembers)
	for role, n := range c.RoleMinNrOfMembers {
		check(n >= 1, "role.%s.min-nr-of-members = %d: must be at least 1", role, n)
	}
	check(c.Voters >= 1, "voters = %d: must be at least 1 (default 5)", c.Voters)
	check(c.GossipInterval > 0, "gossip-interval = %s: must be positive", c.GossipInterval)
	check(c.SeedNodeTimeout > 0, "seed-node-timeout = %s: must be positive", c.SeedNodeTimeout)
	check(fd.HeartbeatInterval > 0, "failure-detector.heartbeat-interval = %s: must be positive", fd.HeartbeatInterval)
	// At phi 1 or more a member is marked unreachable only after more than the acceptable
	// pause without a heartbeat, which the removal of a Down member relies on
	// (Node.leaseExpired).
	check(fd.Threshold >= 1, "failure-detector.threshold = %g: must be at least 1 (Akka's default is 8)", fd.Threshold)
	check(fd.MaxSampleSize > 0, "failure-detector.max-sample-size = %d: must be positive", fd.MaxSampleSize)
	check(fd.MonitoredByNrOfMembers >= 1, "failure-detector.monitored-by-nr-of-members = %d: must be at least 1 (Akka's default is 9)", fd.MonitoredByNrOfMembers)
	check(fd.MinStdDeviation > 0, "failure-detector.min-std-deviation = %s: must be positive", fd.MinStdDeviation)
	// A member's majority lease is renewed by echoes of its own heartbeats: a grant arrives
	// up to two heartbeat intervals (one each way) after the heartbeat it is dated by.
	check(fd.AcceptableHeartbeatPause > 2*fd.HeartbeatInterval,
		"failure-detector.acceptable-heartbeat-pause = %s: must be more than twice heartbeat-interval (%s), or members lose their majority lease between heartbeats",
		fd.AcceptableHeartbeatPause, fd.HeartbeatInterval)
	check(sbr.StableAfter > 0, "split-brain-resolver.stable-after = %s: must be positive", sbr.StableAfter)
	check(c.DownRemovalMargin >= 0, "down-removal-margin = %s: must not be negative", c.DownRemovalMargin)
	check(sbr.DownAllWhenUnstable > 0 || sbr.DownAllWhenUnstable == Off, "split-brain-resolver.down-all-when-unstable = %s: must be on, off or a positive duration", sbr.DownAllWhenUnstable)
	check(c.AllowWeaklyUpMembers > 0 || c.AllowWeaklyUpMembers == Off, "allow-weakly-up-members = %s: must be off or a positive duration", c.AllowWeaklyUpMembers)
	switch sbr.ActiveStrategy {
	case KeepMajority, KeepOldest, DownAllNodes, DownOff:
	case LeaseMajority:
		check(lm.AcquireLeaseDelayForMinority >= 0, "split-brain-resolver.lease-majority.acquire-lease-delay-for-minority = %s: must not be negative", lm.AcquireLeaseDelayForMinority)
		check(lm.ReleaseAfter > 0, "split-brain-resolver.lease-majority.release-after = %s: must be positive", lm.ReleaseAfter)
		// The side that loses the lease downs itself at most this long after it decided;
		// the winning side removes it no sooner than down-removal-margin after it downed it.
		check(lm.LeaseOperationTimeout > 0 && lm.LeaseOperationTimeout < c.DownRemovalMargin,
			"split-brain-resolver.lease-majority.lease-operation-timeout = %s: must be positive and less than down-removal-margin (%s), so that a side that loses the lease stops before the other removes it",
			lm.LeaseOperationTimeout, c.DownRemovalMargin)
	case StaticQuorum:
		check(sbr.QuorumSize >= 1, "split-brain-resolver.static-quorum.quorum-size = %d: static-quorum needs a quorum size of at least 1", sbr.QuorumSize)
	default:
		check(false, "split-brain-resolver.active-strategy = %q: must be one of keep-majority, lease-majority, static-quorum, keep-oldest, down-all, off", sbr.ActiveStrategy)
	}
	return errors.Join(errs...)
}
