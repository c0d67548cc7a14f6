package sim

import "testing"

// raceEnabled is set when the tests run under the race detector (race_test.go).
var raceEnabled bool

// shortRuns bounds a soak's schedules: to short under -short, to raced under the race
// detector with -short.
func shortRuns(runs, short, raced int) int {
	switch {
	case testing.Short() && raceEnabled:
		return min(runs, raced)
	case testing.Short():
		return min(runs, short)
	}
	return runs
}
