//go:build race

package metaraft

// raceEnabled: the tests run under the race detector. The seed loops of the pure machines
// then run a few seeds only (the race detector finds nothing more in the others, at ten
// times the cost); scripts/test runs them all without it.
const raceEnabled = true
