package adminserver

import (
	"fmt"
	"time"

	"github.com/shardmesh/shardmesh/admin/adminpb"
	"github.com/shardmesh/shardmesh/config/value"
)

func (b *nodeBackend) Store() *adminpb.StoreHealth {
	h := b.n.StoreHealth()
	out := &adminpb.StoreHealth{Dir: h.Dir, FreeBytes: h.Space.Free, TotalBytes: h.Space.Total, MinFreeBytes: h.Space.Reserve,
		DiskFull: h.Space.Full, RefusedCommits: h.Space.Refused,
		Refilling: h.Refill.Active, RefillReason: h.Refill.Reason, RefillSynced: uint32(h.Refill.Synced), RefillNeed: uint32(h.Refill.Need)}
	if !h.Space.Since.IsZero() {
		out.FullSinceUnixMs = h.Space.Since.UnixMilli()
	}
	if h.Space.Err != nil {
		out.SpaceError = h.Space.Err.Error()
	}
	return out
}

// storeReasons says why the store makes the member not ready: its disk is full (writes
// to it are refused; new shards go elsewhere), or it refills from its peers (its answers do
// not count in reads).
func storeReasons(s *adminpb.StoreHealth) []string {
	var out []string
	if s.DiskFull {
		why := fmt.Sprintf("disk full: the store in %s has %s free, below store.min-free-space %s: it refuses writes and takes no new shards until space is freed on that file system",
			s.Dir, value.FormatSize(s.FreeBytes), value.FormatSize(s.MinFreeBytes))
		if s.FullSinceUnixMs != 0 {
			why += fmt.Sprintf(" (full since %s, %d commits refused)", time.UnixMilli(s.FullSinceUnixMs).UTC().Format(time.RFC3339), s.RefusedCommits)
		}
		out = append(out, why)
	}
	if s.Refilling {
		out = append(out, fmt.Sprintf("store refilling from its peers (%s): it holds what %d of the %d peers it needs hold; its answers do not count in reads until then",
			s.RefillReason, s.RefillSynced, s.RefillNeed))
	}
	return out
}
