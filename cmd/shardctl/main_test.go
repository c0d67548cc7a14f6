package main

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// TestMain keeps the tests away from the user's saved contexts: a current context would
// fill in flags the tests leave unset.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "shardctl-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Setenv("SHARDMESH_CONTEXTS", filepath.Join(dir, "shardctl.yaml"))
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}
