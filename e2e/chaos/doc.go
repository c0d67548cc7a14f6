// Package chaos runs real sharddaemons under faults and checks what sharding promises.
//
// Run starts a cluster of sharddaemons with the durable built-in counter and
// remember-entities on, drives a steady ask/tell load of increments, and for a set duration
// injects faults chosen from a seed: kill -9 and restart, SIGSTOP/SIGCONT (a long pause),
// graceful shutdown (SIGTERM or the admin shutdown call) and restart, new members joining,
// and network partitions. Partitions use network namespaces joined by veth links to a
// bridge, cut with blackhole routes, where the machine allows it (root, ip netns); without
// them partitions are left out of the schedule and the report says so.
//
// The checker then verifies, from the counters' own journals (sharddaemon
// --entity-journal) and the driver's records:
//
//   - no entity ran on two members at once: incarnations of an entity on different members
//     never overlap in time, except where the older one's process was paused (SIGSTOP)
//     between its last acknowledged change and the newer one's start and acknowledged
//     nothing after that start (it woke up fenced: its lease and the newer epoch refuse
//     it);
//   - acknowledged increments are kept: per counter, acknowledged ≤ final value ≤
//     attempted, no two acknowledged increments answered the same value, and the
//     journal's acknowledged values rise with time across incarnations;
//   - every ask got an answer or an error within its timeout (plus a grace);
//   - once faults stop the cluster returns to balance (shards per member within the
//     strategy's spread);
//   - after stopping every member and starting them again, the same remembered entities
//     run and the counters keep their values.
//
// A failure report starts with the seed and the fault timeline, so the run can be
// repeated. See docs/chaos.md.
package chaos
