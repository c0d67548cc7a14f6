package membership

// Message is a membership protocol message between members. The set is sealed.
type Message interface{ isMessage() }

// Envelope is a message to send. To is empty for a broadcast to every member (gossip).
type Envelope struct {
	To  NodeID
	Msg Message
}

// Heartbeat is broadcast every heartbeat-interval and at once after the sender's state
// changes, so the leader learns quickly that a change has been seen (its digest).
type Heartbeat struct {
	From        NodeID
	Incarnation uint64
	Seq         uint64
	Digest      uint64 // digest of the sender's membership state
	// Ack marks a heartbeat sent at once after a state change, to report the new digest. It
	// does not feed the failure detector, whose inter-arrival statistics assume the regular
	// heartbeat-interval.
	Ack bool
	// Answer marks a heartbeat to a member that does not watch the sender's way (not its
	// neighbor), sent because that member heartbeated it within the acceptable pause (their
	// views disagree for a moment on who watches whom). A member does not answer an answer:
	// two members that once were neighbors would otherwise keep each other heartbeating.
	Answer bool
	// EchoIncarnation and EchoSeq name the receiver's latest regular heartbeat the sender's
	// failure detector counted (EchoSeq 0: none). A member takes a majority-lease grant from a
	// heartbeat only through its echo, dated when it sent the echoed heartbeat (see
	// Node.ServingUntil). Every heartbeat goes to one member: the echo is for it.
	EchoIncarnation uint64
	EchoSeq         uint64
}

// GossipStatus opens a push-pull exchange (gossip.go): the sender's view digest and the
// digest of each bucket of its state.
type GossipStatus struct {
	From    NodeID
	Digest  uint64
	Buckets []uint64
}

// Gossip carries membership state: the records of the buckets that differ in a push-pull
// exchange, a member's own record to tell it it is Down, or the whole state.
type Gossip struct {
	From  NodeID
	State State
	// Reply marks the answer to a GossipStatus, with the answering member's bucket
	// digests: the receiver sends back what still differs.
	Reply   bool
	Buckets []uint64
}

// JoinRequest asks a member of a cluster to admit Member.
type JoinRequest struct {
	Member Member
	Checks map[string]string // settings that must be equal on every member (Config.JoinChecks)
	// Credential is the joining member's credential (Config.Credential), checked by
	// Config.Admit.
	Credential []byte
	// AsksNotMember: a seed in no cluster answers with NotMember (a member of an earlier
	// release neither sets it nor knows NotMember).
	AsksNotMember bool
}

// NotMember answers a JoinRequest from a member that is in no cluster either (Akka's
// InitJoinNack): what a member given a static list of seeds waits for from all of them
// before one of them forms a new cluster (bootstrap.go).
type NotMember struct {
	From NodeID
	// Lowest is the lowest node id the answering member knows of the members looking for a
	// cluster: itself, its seeds, and those asking it to admit them.
	Lowest NodeID
	// SeedsInNone: every seed the answering member was given answered lately that it is in
	// no cluster either. A member forms a cluster only when all its seeds say so: one given a
	// seed that still waits for a member of its own list (starting, or in a cluster
	// elsewhere) does not.
	SeedsInNone bool
}

// JoinReply answers a JoinRequest: the cluster state when admitted, the reason when refused.
type JoinReply struct {
	From    NodeID
	Refused string // empty when admitted
	// Refusal is the joiner's stop reason when refused: StopJoinRefused for a setting that
	// must be equal on every member (its configuration is wrong), StopSuperseded for a
	// process older than a member's incarnation, StopDowned or StopRemoved for one the
	// cluster downed or removed (restart it to join again). A peer of an earlier release
	// sends none (StopLeft): StopJoinRefused.
	Refusal StopReason
	State   State
	// Credential is the admitting member's credential: a joining member with Config.Admit
	// joins only an admitted one.
	Credential []byte
}

// Probe asks a member directly whether it is alive, when its heartbeats are late.
type Probe struct {
	From        NodeID
	Incarnation uint64
	Seq         uint64
}

// ProbeAck answers a Probe; it counts as a heartbeat. It also says how the answering member
// sees the prober, so a member waking from a long pause learns whether it was downed.
type ProbeAck struct {
	From            NodeID
	Incarnation     uint64
	Seq             uint64
	Digest          uint64
	YourIncarnation uint64 // the prober's incarnation as the answering member knows it (0: unknown)
	YourStatus      Status // the prober's status as the answering member knows it
	// YourBeat is the Seq of the prober's latest regular heartbeat the answering member's
	// failure detector counted (0: none), an Echo for the prober.
	YourBeat uint64
}

func (Heartbeat) isMessage()    {}
func (Gossip) isMessage()       {}
func (GossipStatus) isMessage() {}
func (JoinRequest) isMessage()  {}
func (JoinReply) isMessage()    {}
func (NotMember) isMessage()    {}
func (Probe) isMessage()        {}
func (ProbeAck) isMessage()     {}
