package wire

import (
	"fmt"

	"google.golang.org/protobuf/proto"

	"github.com/shardmesh/shardmesh/wire/pb"
)

// MaxRaftFrame bounds a frame of the metadata group's Raft (raft's own messages are cut at
// 1 MiB; a snapshot of the metadata may be larger).
const MaxRaftFrame = 64 << 20

// checkMetaProposal validates a proposal of the metadata group: writes carry a version,
// fence keys are keys with as many fences, merges are records as stored.
func checkMetaProposal(field string, p *pb.MetaProposal) error {
	if p == nil {
		return malformed("%s is missing", field)
	}
	if len(p.Writes)+len(p.FenceKeys)+len(p.Merges) == 0 {
		return malformed("%s changes nothing", field)
	}
	if err := checkRecords(field+".writes", p.Writes, true, false); err != nil {
		return err
	}
	if len(p.FenceKeys) > MaxReplicaRecords || len(p.Fences) != len(p.FenceKeys) {
		return malformed("%s names %d fence keys and %d fences (as many, at most %d)", field, len(p.FenceKeys), len(p.Fences), MaxReplicaRecords)
	}
	for i, k := range p.FenceKeys {
		if err := checkReplicaKey(fmt.Sprintf("%s.fence_keys[%d]", field, i), k); err != nil {
			return err
		}
	}
	return checkRecords(field+".merges", p.Merges, false, false)
}

// DecodeMetaProposal decodes and validates an entry of the metadata group's log.
func DecodeMetaProposal(b []byte) (*pb.MetaProposal, error) {
	var p pb.MetaProposal
	if err := proto.Unmarshal(b, &p); err != nil {
		return nil, malformed("metadata proposal: %v", err)
	}
	if err := checkMetaProposal("proposal", &p); err != nil {
		return nil, err
	}
	return &p, nil
}

// DecodeMetaResult decodes and validates what applying a metadata proposal decided.
func DecodeMetaResult(b []byte) (*pb.MetaResult, error) {
	var r pb.MetaResult
	if err := proto.Unmarshal(b, &r); err != nil {
		return nil, malformed("metadata result: %v", err)
	}
	if err := checkMetaResult("result", &r); err != nil {
		return nil, err
	}
	return &r, nil
}

func checkMetaResult(field string, r *pb.MetaResult) error {
	if r == nil {
		return malformed("%s is missing", field)
	}
	if len(r.Refused) > MaxReplicaRecords {
		return malformed("%s refuses %d writes (at most %d)", field, len(r.Refused), MaxReplicaRecords)
	}
	for i, f := range r.Refused {
		if f == nil {
			return malformed("%s.refused[%d] is missing", field, i)
		}
	}
	return checkRecords(field+".fenced", r.Fenced, false, false)
}

// DecodeMetaSnapshot decodes and validates the metadata group's applied state.
func DecodeMetaSnapshot(b []byte) (*pb.MetaSnapshot, error) {
	var s pb.MetaSnapshot
	if err := proto.Unmarshal(b, &s); err != nil {
		return nil, malformed("metadata snapshot: %v", err)
	}
	if err := checkRecords("snapshot", s.Records, false, false); err != nil {
		return nil, err
	}
	return &s, nil
}

// Marshal encodes a message of the metadata group (proposal, result, snapshot).
func Marshal(m proto.Message) []byte {
	b, err := proto.Marshal(m)
	if err != nil {
		panic(fmt.Sprintf("wire: marshal %T: %v", m, err)) // the store's own messages always encode
	}
	return b
}

func checkMetaCall(c *pb.MetaCall) error {
	switch {
	case c == nil:
		return malformed("meta_call is missing")
	case (c.Propose == nil) == (c.Read == nil):
		return malformed("meta_call holds %s", map[bool]string{true: "both a proposal and a read", false: "neither a proposal nor a read"}[c.Propose != nil])
	case c.Propose != nil:
		return checkMetaProposal("meta_call.propose", c.Propose)
	case len(c.Read.Fences) > 0:
		return malformed("meta_call.read is fenced (a fenced read is a proposal)")
	}
	return checkRead(c.Read)
}

func checkMetaAnswer(a *pb.MetaAnswer) error {
	if a == nil {
		return malformed("meta_answer is missing")
	}
	if len(a.Error) > maxReplicaError {
		return malformed("meta_answer.error is %d bytes long (at most %d)", len(a.Error), maxReplicaError)
	}
	if a.Result != nil {
		if err := checkMetaResult("meta_answer.result", a.Result); err != nil {
			return err
		}
	}
	return checkRecords("meta_answer", a.Records, false, false)
}
