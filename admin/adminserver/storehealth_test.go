package adminserver

import (
	"strings"
	"testing"
	"time"

	"github.com/shardmesh/shardmesh/admin/adminpb"
)

// TestHealthNamesAFullDiskAndARefill: a member whose store's disk is full, or whose store
// refills from its peers, is not ready, and says why.
func TestHealthNamesAFullDiskAndARefill(t *testing.T) {
	self := newID(t)
	b := newFakeBackend(self.String())
	b.registered = true
	s := newTestServer(t, b, Config{})
	health := &adminpb.Request{Call: &adminpb.Request_Health{Health: &adminpb.HealthRequest{}}}
	if h := s.one(t, self, health).GetHealth(); !h.Ready {
		t.Fatalf("sound store: %v", h)
	}
	b.mu.Lock()
	b.store = &adminpb.StoreHealth{Dir: "/data/a/store", FreeBytes: 3 << 20, MinFreeBytes: 256 << 20, DiskFull: true,
		FullSinceUnixMs: time.Date(2026, 11, 26, 3, 0, 0, 0, time.UTC).UnixMilli(), RefusedCommits: 12}
	b.mu.Unlock()
	h := s.one(t, self, health).GetHealth()
	if h.Ready || len(h.Reasons) != 1 || !h.Store.DiskFull {
		t.Fatalf("disk full: %v", h)
	}
	for _, want := range []string{"disk full", "/data/a/store has 3 MiB free", "store.min-free-space 256 MiB", "takes no new shards", "2026-11-26T03:00:00Z", "12 commits refused"} {
		if !strings.Contains(h.Reasons[0], want) {
			t.Errorf("reason %q lacks %q", h.Reasons[0], want)
		}
	}
	b.mu.Lock()
	b.store = &adminpb.StoreHealth{Refilling: true, RefillReason: "rebuilt", RefillSynced: 1, RefillNeed: 2}
	b.mu.Unlock()
	if h := s.one(t, self, health).GetHealth(); h.Ready || len(h.Reasons) != 1 || !strings.Contains(h.Reasons[0], "refilling from its peers (rebuilt)") {
		t.Fatalf("refilling: %v", h)
	}
}
