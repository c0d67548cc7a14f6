package adminserver

import (
	"context"

	"github.com/shardmesh/shardmesh/admin/adminpb"
)

// Health answers as the admin health call (shardctl health) does: whether the member is
// live and ready, and every reason it is not. The daemon's /readyz serves it, so a probe and
// an operator read the same reasons.
func (s *Server) Health(ctx context.Context) *adminpb.HealthResponse {
	return s.health(ctx).GetHealth()
}
