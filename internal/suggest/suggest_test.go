package suggest

import "testing"

func TestClosest(t *testing.T) {
	names := []string{"members", "types", "region-state", "stats", "shutdown", "shard"}
	for word, want := range map[string]string{
		"memebers":    "members",
		"member":      "members",
		"stat":        "stats",
		"regionstate": "region-state",
		"shard":       "shard",
		"frobnicate":  "",
		"x":           "",
	} {
		if got := Closest(word, names); got != want {
			t.Errorf("Closest(%q) = %q, want %q", word, got, want)
		}
	}
}

func TestDistance(t *testing.T) {
	for _, c := range []struct {
		a, b string
		d    int
	}{{"", "", 0}, {"a", "", 1}, {"kitten", "sitting", 3}, {"flaw", "lawn", 2}} {
		if got := Distance(c.a, c.b); got != c.d {
			t.Errorf("Distance(%q, %q) = %d, want %d", c.a, c.b, got, c.d)
		}
	}
}
