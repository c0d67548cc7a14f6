package membership

import (
	"strings"
	"testing"
	"time"
)

// The failure detector settings the majority lease and the removal of Down members rely on
// are checked, and the error names the setting.
func TestValidateFailureDetector(t *testing.T) {
	for name, tc := range map[string]struct {
		tune func(*FailureDetectorConfig)
		want string
	}{
		"pause not above two intervals": {func(fd *FailureDetectorConfig) { fd.AcceptableHeartbeatPause = 2 * time.Second }, "acceptable-heartbeat-pause = 2s: must be more than twice heartbeat-interval (1s)"},
		"threshold below 1":             {func(fd *FailureDetectorConfig) { fd.Threshold = 0.5 }, "failure-detector.threshold = 0.5: must be at least 1"},
	} {
		cfg := DefaultConfig()
		tc.tune(&cfg.FailureDetector)
		if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", name, err, tc.want)
		}
	}
	cfg := DefaultConfig()
	if err := cfg.Validate(); err != nil {
		t.Fatalf("defaults: %v", err)
	}
}
