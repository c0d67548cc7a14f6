//go:build !race

package metaraft

// raceEnabled: see racedetector_on_test.go.
const raceEnabled = false
