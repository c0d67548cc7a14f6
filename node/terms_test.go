package node

import "testing"

func TestNextTermGrowsAcrossGenerationsAndDiffersPerMember(t *testing.T) {
	a, _ := nextTerm(0, 1)
	b, _ := nextTerm(0, 2) // a second coordinator that read the same stored term
	if a == b {
		t.Fatalf("two coordinators of one generation claimed the same term %d", a)
	}
	c, _ := nextTerm(b, 1) // after a full restart, up-number 1 again
	if c <= a || c <= b {
		t.Fatalf("term %d after %d, %d is not above them", c, a, b)
	}
	if _, err := nextTerm(1<<32-1, 1); err == nil {
		t.Fatal("no error when terms run out")
	}
}
