// Package tui is shardctl's live terminal dashboard of a cluster: a bubbletea program
// in the Elm architecture. Update is pure (it reads no clock and does no I/O: time comes in
// with the messages); every call to the cluster is a tea.Cmd that returns a typed message,
// and the watch stream arrives through a command that waits on the subscription's channel
// and is re-armed after each batch of events.
//
// The model talks to the cluster through Source, so tests drive it with a scripted fake;
// shardctl gives it an AdminSource over the admin protocol's client, so it links neither
// the runtime nor the store; a program that wants to embed the dashboard imports it.
package tui
