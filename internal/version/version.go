// Package version holds the version the release build stamps into both binaries:
//
//	go build -ldflags "-X github.com/shardmesh/shardmesh/internal/version.Version=v1.2.3" ./cmd/...
//
// scripts/release and the Dockerfile set it; a plain go build leaves "dev". The binaries'
// version command (internal/cmdline) and sharddaemon's shardmesh_build_info metric read it.
package version

// Version is the release this binary was built as ("v1.2.3"); "dev" when not stamped.
// A variable, not a constant, so that the linker's -X can set it.
var Version = "dev"
