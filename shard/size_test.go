package shard

import (
	"testing"
	"unsafe"
)

// An entity's record in its shard stays at 48 bytes: a member may hold a million idle
// entities (TestMillionIdleEntities), and the record is one of the costs each pays. Move
// what only some entities need behind a pointer rather than growing it.
func TestEntityRecordSize(t *testing.T) {
	if s := unsafe.Sizeof(entity[any]{}); s > 48 {
		t.Fatalf("an entity's record takes %d bytes, more than 48", s)
	}
}
