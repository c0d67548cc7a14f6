package discovery

import (
	"strings"
	"testing"
	"time"
)

func TestBootstrapFormsOnlyWhenLowestStableAndComplete(t *testing.T) {
	t0 := time.Unix(1000, 0)
	margin := 5 * time.Second
	all := map[string]string{"10.0.0.1:4001": "B", "10.0.0.2:4001": "A", "10.0.0.3:4001": "C"}
	type round struct {
		at    time.Duration
		found map[string]string
		form  bool
		why   string // a part of Why
	}
	tests := []struct {
		name   string
		self   string
		min    int
		rounds []round
	}{
		{"lowest forms after the margin", "A", 3, []round{
			{0, all, false, "once they stay the same for 5s"},
			{4 * time.Second, all, false, "once they stay the same"},
			{5 * time.Second, all, true, "forming a new cluster"},
		}},
		{"others never form", "B", 3, []round{
			{0, all, false, "A has the lowest peer id of the 3 found"},
			{time.Minute, all, false, "A has the lowest peer id"},
		}},
		{"a change restarts the margin", "A", 2, []round{
			{0, map[string]string{"10.0.0.2:4001": "A", "10.0.0.1:4001": "B"}, false, "stay the same"},
			{4 * time.Second, all, false, "stay the same"},
			{8 * time.Second, all, false, "stay the same"},
			{9 * time.Second, all, true, ""},
		}},
		{"too few members", "A", 3, []round{
			{0, map[string]string{"10.0.0.2:4001": "A", "10.0.0.1:4001": "B"}, false, "found 2 of the 3 members"},
			{time.Minute, map[string]string{"10.0.0.2:4001": "A", "10.0.0.1:4001": "B"}, false, "found 2 of the 3"},
		}},
		{"an address that did not answer blocks forming", "A", 1, []round{
			{0, map[string]string{"10.0.0.2:4001": "A", "10.0.0.9:4001": ""}, false, "waiting for 10.0.0.9:4001"},
			{time.Minute, map[string]string{"10.0.0.2:4001": "A", "10.0.0.9:4001": ""}, false, "waiting for 10.0.0.9:4001"},
		}},
		{"not listed itself", "A", 1, []round{
			{0, map[string]string{"10.0.0.1:4001": "B"}, false, "not among the addresses"},
			{time.Minute, map[string]string{"10.0.0.1:4001": "B"}, false, "not among"},
		}},
		{"nothing resolved", "A", 1, []round{{0, map[string]string{}, false, "no address"}}},
		{"alone with min 1", "A", 1, []round{
			{0, map[string]string{"10.0.0.2:4001": "A"}, false, ""},
			{5 * time.Second, map[string]string{"10.0.0.2:4001": "A"}, true, "lowest peer id of the 1 found"},
		}},
		{"one member at two addresses counts once", "A", 2, []round{
			{0, map[string]string{"10.0.0.2:4001": "A", "[fd00::2]:4001": "A"}, false, "found 1 of the 2"},
		}},
		{"a peer id changing at an address restarts the margin", "A", 2, []round{
			{0, map[string]string{"10.0.0.2:4001": "A", "10.0.0.1:4001": "B"}, false, ""},
			{4 * time.Second, map[string]string{"10.0.0.2:4001": "A", "10.0.0.1:4001": "D"}, false, ""},
			{6 * time.Second, map[string]string{"10.0.0.2:4001": "A", "10.0.0.1:4001": "D"}, false, "stay the same"},
			{9 * time.Second, map[string]string{"10.0.0.2:4001": "A", "10.0.0.1:4001": "D"}, true, ""},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := NewBootstrap(tt.self, tt.min, margin)
			for i, r := range tt.rounds {
				d := b.Observe(t0.Add(r.at), r.found)
				if d.Form != r.form || !strings.Contains(d.Why, r.why) {
					t.Fatalf("round %d at +%v: %+v, want form=%v and why containing %q", i, r.at, d, r.form, r.why)
				}
			}
		})
	}
}

// TestBootstrapOneFormerWhenAnswersAgree: whatever order the members see the same answer
// in, exactly one of them forms.
func TestBootstrapOneFormerWhenAnswersAgree(t *testing.T) {
	found := map[string]string{}
	ids := []string{"12D3KooWQ", "12D3KooWb", "12D3KooWA", "12D3KooWz", "12D3KooWm"}
	for i, id := range ids {
		found["10.0.0."+string(rune('1'+i))+":4001"] = id
	}
	t0 := time.Unix(0, 0)
	formers := 0
	for _, id := range ids {
		b := NewBootstrap(id, len(ids), time.Second)
		b.Observe(t0, found)
		if b.Observe(t0.Add(time.Second), found).Form {
			formers++
			if id != "12D3KooWA" {
				t.Errorf("%s formed; the lowest peer id is 12D3KooWA", id)
			}
		}
	}
	if formers != 1 {
		t.Fatalf("%d members formed, want exactly 1", formers)
	}
}
