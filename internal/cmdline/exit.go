package cmdline

import (
	"errors"
	"fmt"

	"github.com/urfave/cli/v2"
)

// Exit codes both binaries give (docs/cli.md); each defines its own 3.
const (
	ExitOK      = 0 // done
	ExitFailed  = 1 // failed
	ExitUsage   = 2 // bad usage: a flag, an argument, a file named that is not there
	ExitRefused = 4 // refused: not allowed now (a running daemon holds a directory, …)
)

// Usagef is a one-line bad-usage error (exit code 2).
func Usagef(format string, args ...any) error {
	return cli.Exit(fmt.Sprintf(format, args...), ExitUsage)
}

// Failf is a failure (exit code 1).
func Failf(format string, args ...any) error {
	return cli.Exit(fmt.Sprintf(format, args...), ExitFailed)
}

// Refusef is a refusal (exit code 4).
func Refusef(format string, args ...any) error {
	return cli.Exit(fmt.Sprintf(format, args...), ExitRefused)
}

// UsageError is the OnUsageError of every command: bad usage in one line with exit code 2,
// pointing at --help, and for an unknown flag the closest one.
func UsageError(c *cli.Context, err error, _ bool) error {
	if flag, ok := flagNotDefined(err); ok {
		return UnknownFlag(c, flag)
	}
	return cli.Exit(fmt.Sprintf("%v (see '%s --help')", err, helpName(c)), ExitUsage)
}

// ExitCode is the exit code of an error a command returned: its own, or fallback.
func ExitCode(err error, fallback int) int {
	var ec cli.ExitCoder
	if errors.As(err, &ec) {
		return ec.ExitCode()
	}
	return fallback
}
