package admin

import (
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/shardmesh/shardmesh/admin/adminpb"
	"github.com/shardmesh/shardmesh/wire"
)

// FuzzDecodeResponse: the client's decoder takes any frame without panicking.
func FuzzDecodeResponse(f *testing.F) {
	ok, _ := proto.Marshal(&adminpb.Response{ProtocolVersion: wire.ProtocolVersion, More: true, Result: &adminpb.Response_Event{Event: &adminpb.WatchEvent{Kind: "member-up"}}})
	f.Add(ok)
	f.Add([]byte{0x08, 0x02})
	f.Fuzz(func(t *testing.T, frame []byte) {
		resp, err := decodeResponse(frame)
		if err == nil && resp.ProtocolVersion != wire.ProtocolVersion {
			t.Fatalf("accepted version %d", resp.ProtocolVersion)
		}
	})
}
