package node

import (
	"testing"
	"unsafe"
)

// An incarnation stays at 192 bytes (a size class of Go's allocator): a member may hold a
// million idle entities (TestMillionIdleEntities), and the incarnation is the largest cost
// each pays. Keep what a type's entities share in entityKind or EntityHome.
func TestIncarnationSize(t *testing.T) {
	if s := unsafe.Sizeof(entity{}); s > 192 {
		t.Fatalf("an incarnation takes %d bytes, more than 192", s)
	}
}
