package wire

import (
	"reflect"
	"testing"
	"time"

	"github.com/shardmesh/shardmesh/wire/pb"
)

// A sharding event comes back as it went out; a departure carries the incarnation that
// departs.
func TestEventRoundTrip(t *testing.T) {
	at := time.UnixMilli(time.Now().UnixMilli())
	for _, e := range []ShardingEvent{
		{Kind: pb.ShardingEvent_STORE_DEPARTING, At: at, Incarnation: 7},
		{Type: "counter", Kind: pb.ShardingEvent_HANDOFF_COMPLETED, Shard: "3", From: "a", To: "b", Epoch: 9,
			Took: 40 * time.Millisecond, Cause: "rebalance", At: at, Entities: 2},
	} {
		got, err := DecodeEvent(AppendEvent(nil, e))
		if err != nil {
			t.Fatalf("%v: %v", e.Kind, err)
		}
		if !reflect.DeepEqual(got, e) {
			t.Errorf("%v: got %+v, want %+v", e.Kind, got, e)
		}
	}
}
