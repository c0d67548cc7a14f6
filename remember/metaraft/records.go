package metaraft

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
)

// proposal is a normal entry's payload: a metadata write, named by the member that
// proposed it and its sequence there (so that the proposer knows its own when it applies).
type proposal struct {
	by    string
	seq   uint64
	key   string
	value []byte
}

// errProposal says an entry's payload is not a proposal.
var errProposal = errors.New("metaraft: damaged proposal")

func (p *proposal) encode() []byte {
	b := make([]byte, 0, 3*binary.MaxVarintLen64+len(p.by)+len(p.key)+len(p.value))
	b = binary.AppendUvarint(b, uint64(len(p.by)))
	b = append(b, p.by...)
	b = binary.AppendUvarint(b, p.seq)
	b = binary.AppendUvarint(b, uint64(len(p.key)))
	b = append(b, p.key...)
	return append(b, p.value...)
}

func decodeProposal(b []byte) (proposal, error) {
	var p proposal
	field := func() ([]byte, error) {
		n, k := binary.Uvarint(b)
		if k <= 0 || n > uint64(len(b)-k) {
			return nil, errProposal
		}
		f := b[k : k+int(n)]
		b = b[k+int(n):]
		return f, nil
	}
	by, err := field()
	if err != nil {
		return p, err
	}
	seq, k := binary.Uvarint(b)
	if k <= 0 {
		return p, errProposal
	}
	b = b[k:]
	key, err := field()
	if err != nil {
		return p, err
	}
	return proposal{by: string(by), seq: seq, key: string(key), value: slices.Clone(b)}, nil
}

// records is the applied metadata: the group's state machine.
type records map[string][]byte

// snapshot is what a snapshot's data holds: the records and the names of the members.
type snapshot struct {
	Records map[string][]byte `json:"records"`
	Names   []string          `json:"names"`
}

func encodeSnapshot(r records, names map[uint64]string) ([]byte, error) {
	s := snapshot{Records: r, Names: slices.Sorted(maps.Values(names))}
	b, err := json.Marshal(s)
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
	if s.Records == nil {
		s.Records = map[string][]byte{}
	}
	return s, nil
}
