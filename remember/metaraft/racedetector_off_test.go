//go:build !race

package metaraft

// raceDetector: see racedetector_on_test.go.
const raceDetector = false
