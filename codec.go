package shardmesh

import (
	"encoding/json"
	"fmt"

	"google.golang.org/protobuf/proto"
)

// Codec encodes an entity type's messages or replies when they cross to another member.
type Codec[T any] interface {
	Marshal(v T) ([]byte, error)
	Unmarshal(data []byte) (T, error)
}

// JSONCodec encodes values as JSON.
type JSONCodec[T any] struct{}

// Marshal encodes v as JSON.
func (JSONCodec[T]) Marshal(v T) ([]byte, error) { return json.Marshal(v) }

// Unmarshal decodes JSON into a T.
func (JSONCodec[T]) Unmarshal(data []byte) (T, error) {
	var v T
	err := json.Unmarshal(data, &v)
	return v, err
}

// StringCodec carries strings as their bytes.
type StringCodec struct{}

// Marshal returns the bytes of s.
func (StringCodec) Marshal(s string) ([]byte, error) { return []byte(s), nil }

// Unmarshal returns data as a string.
func (StringCodec) Unmarshal(data []byte) (string, error) { return string(data), nil }

// BytesCodec carries byte slices as they are.
type BytesCodec struct{}

// Marshal returns b.
func (BytesCodec) Marshal(b []byte) ([]byte, error) { return b, nil }

// Unmarshal returns data.
func (BytesCodec) Unmarshal(data []byte) ([]byte, error) { return data, nil }

// ProtoCodec carries protobuf messages; New returns an empty message to decode into.
type ProtoCodec[T proto.Message] struct{ New func() T }

// Marshal encodes m.
func (c ProtoCodec[T]) Marshal(m T) ([]byte, error) { return proto.Marshal(m) }

// Unmarshal decodes data into a new message.
func (c ProtoCodec[T]) Unmarshal(data []byte) (T, error) {
	if c.New == nil {
		var zero T
		return zero, fmt.Errorf("ProtoCodec needs New")
	}
	m := c.New()
	return m, proto.Unmarshal(data, m)
}
