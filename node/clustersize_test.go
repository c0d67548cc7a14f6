package node

import (
	"os"
	"strings"
	"testing"
)

func TestLastClusterSize(t *testing.T) {
	d := &dataDir{path: t.TempDir()}
	if got, err := d.lastClusterSize(); got != 0 || err != nil {
		t.Fatalf("no file: %d, %v; want 0 (a new member)", got, err)
	}
	for content, want := range map[string]uint32{"7\n": 7, " 3 ": 3} {
		if err := os.WriteFile(d.file(lastClusterFile), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		if got, err := d.lastClusterSize(); got != want || err != nil {
			t.Errorf("%q: %d, %v; want %d", content, got, err, want)
		}
	}
	for _, content := range []string{"seven", "70000", "-1", ""} {
		if err := os.WriteFile(d.file(lastClusterFile), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := d.lastClusterSize()
		if err == nil || !strings.Contains(err.Error(), lastClusterFile) || !strings.Contains(err.Error(), "cluster.forget-last-cluster=on") {
			t.Errorf("%q: err = %v; want one naming the file and the way out", content, err)
		}
	}
}
