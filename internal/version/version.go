// Package version holds the version the release build stamps into both binaries:
//
//	go build -ldflags "-X github.com/shardmesh/shardmesh/internal/version.Version=v1.2.3" ./cmd/...
//
// scripts/release and the Dockerfile set it; a plain go build leaves "dev". The binaries'
// version output reads it through String.
package version

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

// Version is the release this binary was built as ("v1.2.3"); "dev" when not stamped.
// A variable, not a constant, so that the linker's -X can set it.
var Version = "dev"

// String is the one-line version of program name: the stamp, the commit it was built from
// (when the build recorded one) and the Go toolchain and platform, e.g.
// "sharddaemon v1.2.3 (commit 1a2b3c4d5e6f, go1.26.8 linux/arm64)".
func String(name string) string {
	commit := ""
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, s := range info.Settings {
			if s.Key == "vcs.revision" && len(s.Value) >= 12 {
				commit = "commit " + s.Value[:12] + ", "
			}
		}
	}
	return fmt.Sprintf("%s %s (%s%s %s/%s)", name, Version, commit, runtime.Version(), runtime.GOOS, runtime.GOARCH)
}
