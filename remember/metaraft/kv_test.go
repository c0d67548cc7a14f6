package metaraft

import (
	"encoding/binary"
	"encoding/json"
)

// kv is the tests' state machine: a map of keys to values, written by proposals of one
// key and value each.
type kv struct {
	recs    map[string][]byte
	applied func(index uint64, key string, value []byte) // told each apply (the checker)
}

func newKV(applied func(uint64, string, []byte)) *kv {
	return &kv{recs: map[string][]byte{}, applied: applied}
}

func encodeKV(key string, value []byte) []byte {
	b := binary.AppendUvarint(nil, uint64(len(key)))
	return append(append(b, key...), value...)
}

func (s *kv) Apply(index uint64, data []byte) []byte {
	n, k := binary.Uvarint(data)
	if k <= 0 || n > uint64(len(data)-k) {
		return nil // every member skips it alike
	}
	key, value := string(data[k:k+int(n)]), data[k+int(n):]
	s.recs[key] = value
	if s.applied != nil {
		s.applied(index, key, value)
	}
	return nil
}

func (s *kv) Snapshot() ([]byte, error) { return json.Marshal(s.recs) }

func (s *kv) Restore(data []byte) error {
	recs := map[string][]byte{}
	if err := json.Unmarshal(data, &recs); err != nil {
		return err
	}
	s.recs = recs
	return nil
}

func (s *kv) value(key string) ([]byte, bool) {
	v, ok := s.recs[key]
	return v, ok
}
