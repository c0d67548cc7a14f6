package version

import (
	"runtime"
	"strings"
	"testing"
)

func TestStringNamesStampAndPlatform(t *testing.T) {
	old := Version
	t.Cleanup(func() { Version = old })
	Version = "v9.8.7"
	s := String("sharddaemon")
	for _, want := range []string{"sharddaemon v9.8.7 (", runtime.Version(), runtime.GOOS + "/" + runtime.GOARCH} {
		if !strings.Contains(s, want) {
			t.Errorf("String = %q, want it to contain %q", s, want)
		}
	}
}
