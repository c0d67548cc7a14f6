// Package sim is shardmesh's deterministic multi-node simulation: the real state machines of
// N members wired through an in-memory network that can delay, drop, duplicate, reorder and
// partition messages, under a virtual clock and a seeded random source. The same seed always
// gives the same run, so a failing random schedule can be replayed from its seed.
//
// Invariants are checked after every delivered message and every tick, not only at the end.
// Scenario scripts in testdata/ drive it through datadriven (go test ./internal/sim -rewrite
// regenerates their expected output); TestSoak runs random schedules and prints the seed and
// the fault timeline of any failure.
package sim
