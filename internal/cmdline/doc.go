// Package cmdline holds the command-line conventions shardctl and sharddaemon share: the
// exit codes both give, bad usage as one line with exit code 2, flags written after the
// arguments, tables and JSON on standard output, and confirmation on a terminal. Operators
// meet the same conventions whichever binary runs a command (shardctl hands its offline
// data commands to sharddaemon).
package cmdline
