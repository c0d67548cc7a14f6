package metaraft

import (
	"errors"

	pb "go.etcd.io/raft/v3/raftpb"
)

// checkFrame checks what raft takes on trust in a peer's message (self is this member's
// raft id), so that a damaged frame is refused with an error rather than stop the member
// when raft steps it: a message from this member itself, one without a term (raft would
// take it for a local one; only forwarded proposals and read requests carry none), a
// snapshot whose data does not decode (it would be stored, and the member could not
// restore it, now or when it restarts). A frame that passes and still contradicts this
// member's log (a commit index past it, a snapshot of another configuration at an index
// it holds) stops the member: its log, or the leader's, was damaged or lost.
func checkFrame(self uint64, msg *pb.Message) error {
	switch {
	case msg.GetFrom() == self:
		return errors.New("it names this member as its sender")
	case msg.GetTerm() == 0 && msg.GetType() != pb.MsgProp && msg.GetType() != pb.MsgReadIndex:
		return errors.New("it has no term")
	case msg.GetType() == pb.MsgSnap:
		if _, err := decodeSnapshot(msg.GetSnapshot().GetData()); err != nil {
			return err
		}
	}
	return nil
}
