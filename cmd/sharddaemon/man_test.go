package main

import (
	"testing"

	"github.com/shardmesh/shardmesh/internal/cmdline"
)

// TestManPageForEveryCommand: every command that --help lists has its man page
// (sharddaemon-config-check for 'sharddaemon config check'), and nothing else has one;
// every exit code a page lists says what it means.
func TestManPageForEveryCommand(t *testing.T) {
	for _, err := range cmdline.CheckManPages(newApp(new(int)), 12) {
		t.Error(err)
	}
}
