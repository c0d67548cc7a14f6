package membership

import (
	"math"
	"time"
)

// phiDetector is the phi-accrual failure detector of Hayashibara et al. as Akka implements it
// (akka.remote.PhiAccrualFailureDetector): the suspicion level phi of a peer is -log10 of the
// probability that a heartbeat arrives later than it already is, under a normal distribution of
// the observed inter-arrival times, widened by the acceptable heartbeat pause.
type phiDetector struct {
	threshold       float64
	maxSamples      int
	minStdDev       time.Duration
	acceptablePause time.Duration

	intervals []float64 // ring of inter-arrival times in ms
	next      int
	sum, sq   float64
	last      time.Time
	assumed   bool // last is an assumed arrival (the member was just learned of), not a heartbeat
}

func newPhiDetector(cfg FailureDetectorConfig) *phiDetector {
	d := &phiDetector{
		threshold:       cfg.Threshold,
		maxSamples:      cfg.MaxSampleSize,
		minStdDev:       cfg.MinStdDeviation,
		acceptablePause: cfg.AcceptableHeartbeatPause,
	}
	// Bootstrap with two samples around the first-heartbeat estimate, as Akka does, so the
	// detector has a distribution before the second heartbeat arrives.
	mean := float64(cfg.FirstHeartbeatEstimate) / float64(time.Millisecond)
	std := mean / 4
	d.add(mean - std)
	d.add(mean + std)
	return d
}

func (d *phiDetector) add(ms float64) {
	if len(d.intervals) < d.maxSamples {
		d.intervals = append(d.intervals, ms)
	} else {
		old := d.intervals[d.next]
		d.sum -= old
		d.sq -= old * old
		d.intervals[d.next] = ms
		d.next = (d.next + 1) % d.maxSamples
	}
	d.sum += ms
	d.sq += ms * ms
}

// heartbeat records a heartbeat arriving at now. As in Akka, the interval that ends a
// period in which the member was unavailable is not a sample: one long gap (a pause, a
// partition) would otherwise widen the distribution for a thousand heartbeats, and a later
// crash would take minutes to detect instead of seconds.
func (d *phiDetector) heartbeat(now time.Time) {
	if !d.last.IsZero() && !d.assumed && d.available(now) {
		if gap := now.Sub(d.last); gap > 0 {
			d.add(float64(gap) / float64(time.Millisecond))
		}
	}
	d.last, d.assumed = now, false
}

// assume starts the clock for a member not heard from yet, so one that never sends a
// heartbeat still becomes unreachable; the gap to its first heartbeat is not a sample.
func (d *phiDetector) assume(now time.Time) { d.last, d.assumed = now, true }

// stats returns the mean and the variance of the inter-arrival samples, in ms.
func (d *phiDetector) stats() (mean, variance float64) {
	n := float64(len(d.intervals))
	mean = d.sum / n
	return mean, max(d.sq/n-mean*mean, 0)
}

// phi returns the suspicion level at now; 0 before the first heartbeat.
func (d *phiDetector) phi(now time.Time) float64 {
	if d.last.IsZero() {
		return 0
	}
	mean, variance := d.stats()
	std := max(math.Sqrt(variance), float64(d.minStdDev)/float64(time.Millisecond))
	mean += float64(d.acceptablePause) / float64(time.Millisecond)
	return phiOf(float64(now.Sub(d.last))/float64(time.Millisecond), mean, std)
}

// phiOf is phi for a silence of elapsed ms under a normal distribution of the
// inter-arrival times with the given mean and standard deviation (ms), by the logistic
// approximation of the normal CDF that Akka uses: it avoids erf and is accurate to ~1e-3.
func phiOf(elapsed, mean, std float64) float64 {
	y := (elapsed - mean) / std
	e := math.Exp(-y * (1.5976 + 0.070566*y*y))
	if elapsed > mean {
		return -math.Log10(e / (1 + e))
	}
	return -math.Log10(1 - 1/(1+e))
}

// quiet reports whether the member was heard from within the mean interval plus the
// acceptable pause: phi is then below log10(2) (the silence is no longer than the mean of the
// widened distribution), under any threshold the configuration allows (at least 1) and half
// of it, so a caller may skip computing it.
func (d *phiDetector) quiet(now time.Time) bool {
	if d.last.IsZero() {
		return true
	}
	mean := d.sum/float64(len(d.intervals)) + float64(d.acceptablePause)/float64(time.Millisecond)
	return float64(now.Sub(d.last))/float64(time.Millisecond) <= mean
}

// available reports whether phi is below the threshold at now.
func (d *phiDetector) available(now time.Time) bool { return d.phi(now) < d.threshold }
