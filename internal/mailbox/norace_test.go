//go:build !race

package mailbox

// raceEnabled: the race detector makes sync.Pool drop a share of what it is given, so
// allocation counts mean nothing under it.
const raceEnabled = false
