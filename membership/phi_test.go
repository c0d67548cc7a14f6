package membership

import (
	"testing"
	"time"
)

func TestPhiRisesWithSilence(t *testing.T) {
	cfg := DefaultConfig().FailureDetector
	d := newPhiDetector(cfg)
	t0 := time.Unix(0, 0)
	for i := range 30 {
		d.heartbeat(t0.Add(time.Duration(i) * time.Second))
	}
	last := t0.Add(29 * time.Second)
	if phi := d.phi(last.Add(time.Second)); phi > 1 {
		t.Errorf("phi one interval after a heartbeat = %.2f, want low", phi)
	}
	if !d.available(last.Add(3 * time.Second)) {
		t.Error("unavailable within the acceptable pause")
	}
	// Akka's defaults: regular 1 s heartbeats, 3 s acceptable pause, threshold 8 — a member is
	// unreachable between 4 and 5 s after its last heartbeat.
	var at time.Duration
	for dt := time.Duration(0); dt < 10*time.Second; dt += 10 * time.Millisecond {
		if !d.available(last.Add(dt)) {
			at = dt
			break
		}
	}
	if at < 4*time.Second || at > 5*time.Second {
		t.Errorf("unreachable %v after the last heartbeat, want 4-5 s", at)
	}
	// phi only grows while silent.
	prev := 0.0
	for dt := time.Duration(0); dt < 8*time.Second; dt += 100 * time.Millisecond {
		phi := d.phi(last.Add(dt))
		if phi < prev-1e-9 {
			t.Fatalf("phi fell from %.3f to %.3f at %v", prev, phi, dt)
		}
		prev = phi
	}
}

func TestAssumedStartIsNotASample(t *testing.T) {
	d := newPhiDetector(DefaultConfig().FailureDetector)
	t0 := time.Unix(0, 0)
	d.assume(t0)
	d.heartbeat(t0.Add(30 * time.Second)) // first real heartbeat long after the member was learned of
	if n := len(d.intervals); n != 2 {
		t.Fatalf("%d samples, want only the 2 bootstrap ones", n)
	}
}

func TestVersionCompare(t *testing.T) {
	cases := []struct {
		a, b Version
		want int
	}{
		{"1.10.0", "1.9.3", 1}, {"2", "2.0.0", 0}, {"1.0.0-RC1", "1.0.0", -1}, {"1.0.0-RC1", "1.0.0-RC2", -1},
		{"", "0.0.1", -1}, {"3.1", "3.1", 0}, {"10", "9", 1},
	}
	for _, c := range cases {
		if got := c.a.Compare(c.b); got != c.want {
			t.Errorf("%q vs %q = %d, want %d", c.a, c.b, got, c.want)
		}
		if got := c.b.Compare(c.a); got != -c.want {
			t.Errorf("%q vs %q = %d, want %d", c.b, c.a, got, -c.want)
		}
	}
}
