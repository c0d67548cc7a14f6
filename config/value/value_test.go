package value

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestParseDuration(t *testing.T) {
	good := map[string]time.Duration{
		"120s": 120 * time.Second, "100 ms": 100 * time.Millisecond, "2 minutes": 2 * time.Minute,
		"1.5s": 1500 * time.Millisecond, "1m30s": 90 * time.Second, "0s": 0, "3 d": 72 * time.Hour,
	}
	for s, want := range good {
		if got, err := ParseDuration(s); err != nil || got != want {
			t.Errorf("ParseDuration(%q) = %v, %v; want %v", s, got, err, want)
		}
	}
	for _, s := range []string{"", "120", "ten seconds", "-1s", "5 parsecs", "1e400s"} {
		if _, err := ParseDuration(s); err == nil {
			t.Errorf("ParseDuration(%q) accepted", s)
		}
	}
}

func TestErrorsNameKeyValueAndAllowed(t *testing.T) {
	_, err := Int("sharding.number-of-shards", "many", 1, 1<<20)
	var e *Error
	if !errors.As(err, &e) || e.Key != "sharding.number-of-shards" {
		t.Fatalf("err = %v", err)
	}
	if msg := err.Error(); !strings.Contains(msg, `"many"`) || !strings.Contains(msg, "from 1 to 1048576") {
		t.Errorf("message %q lacks the value or the range", msg)
	}
	if _, err := Enum("cluster.split-brain-resolver.active-strategy", "keep-minority", "keep-majority", "static-quorum"); err == nil ||
		!strings.Contains(err.Error(), "one of keep-majority, static-quorum") {
		t.Errorf("enum error = %v", err)
	}
}

func TestConversions(t *testing.T) {
	if n, err := Int("k", int64(7), 0, 10); err != nil || n != 7 {
		t.Error(n, err)
	}
	if n, err := Int("k", "7", 0, 10); err != nil || n != 7 {
		t.Error(n, err)
	}
	if _, err := Int("k", 7.5, 0, 10); err == nil {
		t.Error("7.5 accepted as an integer")
	}
	if b, err := Bool("k", "on"); err != nil || !b {
		t.Error(b, err)
	}
	if _, err := Bool("k", "maybe"); err == nil {
		t.Error("maybe accepted")
	}
	if ss, err := Strings("k", "a, b,,c"); err != nil || strings.Join(ss, "|") != "a|b|c" {
		t.Error(ss, err)
	}
	if !IsOff("none") || !IsOff("OFF") || IsOff("on") {
		t.Error("IsOff")
	}
}
