//go:build race

package sim

// The race detector slows the simulation down several times and finds little in it (it runs
// on one goroutine): the soaks run a few schedules under it, and in full without it
// (scripts/test's soak step).
func init() { raceEnabled = true }
