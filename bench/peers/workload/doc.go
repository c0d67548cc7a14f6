// Package workload is shardmesh's remote tell workload for Go actor frameworks: two actor
// systems in one process, connected over loopback TCP by the framework's own remote
// transport; one goroutine sends N messages of a 100-byte payload round-robin to 1,000
// actors on the other system, and the figure is the messages those actors received and
// processed per second, from the first send until the last is processed, as shardmesh's
// BenchmarkRemoteTell counts them. With -mode ask, the request/response counterpart of
// BenchmarkRemoteAsk: one goroutine asks 100 actors in turn, each ask waiting for its
// reply, and the figures are the p50 and p99 latencies. Each framework has its own command
// (protoactor, hollywood): both register a protobuf file named actor.proto, so they cannot
// share a binary.
//
// This is a module of its own so that shardmesh does not depend on the frameworks.
package workload
