package main

import (
	"testing"

	"github.com/shardmesh/shardmesh/internal/cmdline"
)

// TestManPageForEveryCommand: every command that --help lists has its man page
// (shardctl-shard-move for 'shardctl shard move'), and nothing else has one; every exit
// code a page lists says what it means.
func TestManPageForEveryCommand(t *testing.T) {
	for _, err := range cmdline.CheckManPages(newApp(), 40) {
		t.Error(err)
	}
}
