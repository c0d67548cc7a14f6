// Package e2e tests shardmesh with real processes: it builds sharddaemon and shardctl once,
// starts daemons on loopback with kernel-chosen ports in temporary data directories, and
// drives them with shardctl, signals and kill -9, as an operator would.
package e2e
