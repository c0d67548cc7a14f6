package membership

import (
	"math"
	"testing"
	"time"
)

// The cases of Akka's AccrualFailureDetectorSpec (akka-remote), one for one. Akka's tests
// draw one timestamp from a fake clock per call; here each call is given its time.

// akkaDetector is createFailureDetector of the spec: threshold 8, 1,000 samples, 100 ms
// minimum deviation, no acceptable pause, a first-heartbeat estimate of 1 s, unless set.
func akkaDetector(threshold float64, maxSamples int, acceptable time.Duration) *phiDetector {
	return newPhiDetector(FailureDetectorConfig{
		Threshold:                threshold,
		MaxSampleSize:            maxSamples,
		MinStdDeviation:          100 * time.Millisecond,
		AcceptableHeartbeatPause: acceptable,
		FirstHeartbeatEstimate:   time.Second,
	})
}

// clock turns the spec's intervals (ms) into the times of successive calls.
type clock struct {
	times []time.Time
}

func newClock(intervals ...int64) *clock {
	c := &clock{}
	t := time.Unix(1000, 0)
	for i, ms := range intervals {
		if i > 0 {
			t = t.Add(time.Duration(ms) * time.Millisecond)
		}
		c.times = append(c.times, t)
	}
	return c
}

func (c *clock) next() time.Time {
	t := c.times[0]
	c.times = c.times[1:]
	return t
}

func cdf(phi float64) float64 { return 1 - math.Pow(10, -phi) }

func near(t *testing.T, what string, got, want, tol float64) {
	t.Helper()
	if math.Abs(got-want) > tol {
		t.Errorf("%s = %.5f, want %.5f ± %g", what, got, want, tol)
	}
}

func TestAkkaPhiCumulativeDistribution(t *testing.T) {
	for _, c := range []struct{ x, want, tol float64 }{
		{0, 0.5, 0.001}, {6, 0.7257, 0.001}, {15, 0.9332, 0.001}, {20, 0.97725, 0.001},
		{25, 0.99379, 0.001}, {35, 0.99977, 0.001}, {40, 0.99997, 0.0001},
	} {
		near(t, "cdf(phi(x, 0, 10))", cdf(phiOf(c.x, 0, 10)), c.want, c.tol)
	}
	for x := 0.0; x < 40; x++ {
		if phiOf(x, 0, 10) >= phiOf(x+1, 0, 10) {
			t.Errorf("phi(%g) >= phi(%g): not increasing", x, x+1)
		}
	}
	near(t, "cdf(phi(22, 20, 3))", cdf(phiOf(22, 20, 3)), 0.7475, 0.001)
}

func TestAkkaPhiOutliers(t *testing.T) {
	near(t, "phi(10, 0, 1)", phiOf(10, 0, 1), 38, 1)
	if got := phiOf(-25, 0, 1); got != 0 {
		t.Errorf("phi(-25, 0, 1) = %g, want 0", got)
	}
}

func TestAkkaPhiRealisticValues(t *testing.T) {
	for _, c := range []struct{ diff, want float64 }{
		{0, 0}, {500, 0.1}, {1000, 0.3}, {1200, 1.6}, {1400, 4.7}, {1600, 10.8}, {1700, 15.3},
	} {
		near(t, "phi", phiOf(c.diff, 1000, 100), c.want, 0.1)
	}
	if phiOf(1100, 1000, 500) >= phiOf(1100, 1000, 100) {
		t.Error("a larger deviation must give a lower phi")
	}
}

func TestAkkaPhiZeroWithoutHeartbeats(t *testing.T) {
	d := akkaDetector(8, 1000, 0)
	if got := d.phi(time.Unix(5, 0)); got != 0 {
		t.Errorf("phi before any heartbeat = %g, want 0", got)
	}
}

func TestAkkaPhiGuessAfterOneHeartbeat(t *testing.T) {
	c := newClock(0, 1000, 1000, 1000, 1000)
	d := akkaDetector(8, 1000, 0)
	d.heartbeat(c.next())
	near(t, "phi 1 s after", d.phi(c.next()), 0.3, 0.2)
	near(t, "phi 2 s after", d.phi(c.next()), 4.5, 0.3)
	if got := d.phi(c.next()); got <= 15 {
		t.Errorf("phi 3 s after = %g, want > 15", got)
	}
}

func TestAkkaPhiFirstIntervalAfterSecondHeartbeat(t *testing.T) {
	c := newClock(0, 100, 100, 100)
	d := akkaDetector(8, 1000, 0)
	d.heartbeat(c.next())
	if got := d.phi(c.next()); got <= 0 {
		t.Errorf("phi = %g, want > 0", got)
	}
	d.heartbeat(c.next())
	if got := d.phi(c.next()); got <= 0 {
		t.Errorf("phi = %g, want > 0", got)
	}
}

func TestAkkaPhiAvailableAfterHeartbeats(t *testing.T) {
	c := newClock(0, 1000, 100, 100)
	d := akkaDetector(8, 1000, 0)
	for range 3 {
		d.heartbeat(c.next())
	}
	if !d.available(c.next()) {
		t.Error("unavailable after a series of heartbeats")
	}
}

func TestAkkaPhiDeadWhenHeartbeatsMissed(t *testing.T) {
	c := newClock(0, 1000, 100, 100, 7000)
	d := akkaDetector(3, 1000, 0)
	for range 3 {
		d.heartbeat(c.next())
	}
	if !d.available(c.next()) {
		t.Error("unavailable at 1,200 ms")
	}
	if d.available(c.next()) {
		t.Error("available at 8,200 ms")
	}
}

// The case issue 25 found broken: after a 5-minute pause the next 7 s pause must still be
// detected, so the interval that ends the long pause must not enter the history.
func TestAkkaPhiAvailableAgainAfterFailure(t *testing.T) {
	intervals := []int64{0}
	for range 999 {
		intervals = append(intervals, 1000)
	}
	intervals = append(intervals, 5*60*1000, 100, 900, 100, 7000, 100, 900, 100, 900)
	c := newClock(intervals...)
	d := akkaDetector(8, 1000, 3*time.Second)
	for range 1000 {
		d.heartbeat(c.next())
	}
	steps := []struct {
		beat bool
		want bool
		what string
	}{
		{false, false, "after the long pause"},
		{true, false, ""},
		{false, true, "after the first heartbeat back"},
		{true, false, ""},
		{false, false, "after the 7 s pause"},
		{true, false, ""},
		{false, true, "back again"},
		{true, false, ""},
		{false, true, "still"},
	}
	for _, s := range steps {
		at := c.next()
		if s.beat {
			d.heartbeat(at)
			continue
		}
		if got := d.available(at); got != s.want {
			t.Errorf("available %s = %v, want %v", s.what, got, s.want)
		}
	}
}

func TestAkkaPhiAcceptsConfiguredMissingHeartbeats(t *testing.T) {
	c := newClock(0, 1000, 1000, 1000, 4000, 1000, 1000)
	d := akkaDetector(8, 1000, 3*time.Second)
	for range 4 {
		d.heartbeat(c.next())
	}
	if !d.available(c.next()) {
		t.Error("unavailable within the acceptable pause")
	}
	d.heartbeat(c.next())
	if !d.available(c.next()) {
		t.Error("unavailable after the next heartbeat")
	}
}

func TestAkkaPhiFailsAfterConfiguredMissingHeartbeats(t *testing.T) {
	c := newClock(0, 1000, 1000, 1000, 1000, 1000, 500, 500, 5000)
	d := akkaDetector(8, 1000, 3*time.Second)
	for range 6 {
		d.heartbeat(c.next())
	}
	if !d.available(c.next()) {
		t.Error("unavailable before the pause")
	}
	d.heartbeat(c.next())
	if d.available(c.next()) {
		t.Error("available 5 s after the last heartbeat")
	}
}

func TestAkkaPhiUsesMaxSampleSize(t *testing.T) {
	c := newClock(0, 100, 100, 100, 100, 600, 500, 500, 500, 500, 500)
	d := akkaDetector(8, 3, 0)
	for range 4 {
		d.heartbeat(c.next())
	}
	phi1 := d.phi(c.next())
	for range 4 {
		d.heartbeat(c.next())
	}
	phi2 := d.phi(c.next())
	near(t, "phi with 500 ms samples", phi2, phi1, 0.001)
}

func TestAkkaHeartbeatStatistics(t *testing.T) {
	history := func(maxSamples int, samples ...float64) *phiDetector {
		d := &phiDetector{maxSamples: maxSamples}
		for _, s := range samples {
			d.add(s)
		}
		return d
	}
	mean, variance := history(20, 100, 200, 125, 340, 130).stats()
	near(t, "mean", mean, 179, 1e-5)
	near(t, "variance", variance, 7584, 1e-5)
	_, variance = history(600, 1000).stats()
	near(t, "variance of one sample", variance, 0, 1e-5)
	d := history(3, 100, 110, 90)
	mean, variance = d.stats()
	near(t, "mean of 3", mean, 100, 1e-5)
	near(t, "variance of 3", variance, 66.6666667, 1e-5)
	d.add(140)
	mean, variance = d.stats()
	near(t, "mean capped at 3", mean, 113.333333, 1e-5)
	near(t, "variance capped at 3", variance, 422.222222, 1e-5)
	d.add(80)
	mean, variance = d.stats()
	near(t, "mean capped at 3, again", mean, 103.333333, 1e-5)
	near(t, "variance capped at 3, again", variance, 688.88888889, 1e-5)
}
