// Package datadir owns what a member keeps on disk: the files of its data directory (the
// lock, the identity, the incarnation, the addresses it listens on, the size of its last
// cluster, the directory of its store) and the key families of its replicated store.
//
// The runtime (package node) writes them; the offline data tools (package datatool, run by
// sharddaemon's and shardctl's data commands) and shardctl's --data-dir read them. Nothing
// else names a file of a data directory or a family of the store's keys. The package
// imports no store: shardctl reads a running member's addrs through it without linking
// Badger.
package datadir
