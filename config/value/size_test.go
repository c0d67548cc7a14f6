package value

import (
	"strings"
	"testing"
)

func TestParseSize(t *testing.T) {
	good := map[string]int64{
		"0": 0, "4096": 4096, "256MiB": 256 << 20, "64 M": 64 << 20, "1.5 GiB": 3 << 29, "500 kB": 500_000,
		"2g": 2 << 30, "10 bytes": 10, "1TB": 1e12, "3 mebibytes": 3 << 20,
	}
	for s, want := range good {
		if got, err := ParseSize(s); err != nil || got != want {
			t.Errorf("ParseSize(%q) = %v, %v; want %v", s, got, err, want)
		}
	}
	for _, s := range []string{"", "MiB", "-1MiB", "12 parsecs", "1e3", "99999999999 TiB"} {
		if n, err := ParseSize(s); err == nil {
			t.Errorf("ParseSize(%q) = %d, accepted", s, n)
		}
	}
}

func TestSize(t *testing.T) {
	for v, want := range map[any]int64{"off": 0, false: 0, "none": 0, 1024: 1024, int64(5): 5, "1KiB": 1024, 2048.0: 2048} {
		if got, err := Size("store.min-free-space", v, ""); err != nil || got != want {
			t.Errorf("Size(%v) = %v, %v; want %v", v, got, err, want)
		}
	}
	_, err := Size("store.min-free-space", "lots", "")
	if err == nil || !strings.Contains(err.Error(), `store.min-free-space = "lots"`) || !strings.Contains(err.Error(), "256MiB") {
		t.Errorf("error = %v", err)
	}
	if _, err := Size("k", -3, ""); err == nil {
		t.Error("-3 accepted")
	}
}

func TestFormatSize(t *testing.T) {
	for n, want := range map[uint64]string{0: "0 B", 1023: "1023 B", 1024: "1 KiB", 3<<20 + 200<<10: "3.2 MiB", 256 << 20: "256 MiB", 1 << 40: "1 TiB"} {
		if got := FormatSize(n); got != want {
			t.Errorf("FormatSize(%d) = %q, want %q", n, got, want)
		}
		if back, err := ParseSize(FormatSize(n)); err != nil || (n < 1<<20 && uint64(back) != n) {
			t.Errorf("ParseSize(FormatSize(%d)) = %d, %v", n, back, err)
		}
	}
}
