package metaraft

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
)

// proposal is a normal entry's payload: the state machine's data, named by the member that
// proposed it and its sequence there (so that the proposer knows its own when it applies).
type proposal struct {
	by   string
	seq  uint64
	data []byte
}

// errProposal says an entry's payload is not a proposal.
var errProposal = errors.New("metaraft: damaged proposal")

func (p *proposal) encode() []byte {
	b := make([]byte, 0, 2*binary.MaxVarintLen64+len(p.by)+len(p.data))
	b = binary.AppendUvarint(b, uint64(len(p.by)))
	b = append(b, p.by...)
	b = binary.AppendUvarint(b, p.seq)
	return append(b, p.data...)
}

func decodeProposal(b []byte) (proposal, error) {
	n, k := binary.Uvarint(b)
	if k <= 0 || n > uint64(len(b)-k) {
		return proposal{}, errProposal
	}
	by := string(b[k : k+int(n)])
	b = b[k+int(n):]
	seq, k := binary.Uvarint(b)
	if k <= 0 {
		return proposal{}, errProposal
	}
	return proposal{by: by, seq: seq, data: slices.Clone(b[k:])}, nil
}

// snapshot is what a snapshot's data holds: the state machine's snapshot and the names of
// the members.
type snapshot struct {
	Data  []byte  `json:"data"`
	Names []Voter `json:"names"`
}

func encodeSnapshot(data []byte, names map[uint64]string) ([]byte, error) {
	voters := make([]Voter, 0, len(names))
	for id, n := range names {
		voters = append(voters, Voter{Name: n, ID: id})
	}
	b, err := json.Marshal(snapshot{Data: data, Names: SortVoters(voters)})
	if err != nil {
		return nil, fmt.Errorf("metaraft: encode snapshot: %w", err)
	}
	return b, nil
}

func decodeSnapshot(b []byte) (snapshot, error) {
	var s snapshot
	if err := json.Unmarshal(b, &s); err != nil {
		return s, fmt.Errorf("metaraft: damaged snapshot: %w", err)
	}
	return s, nil
}
