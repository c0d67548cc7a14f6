package datatool

import (
	"errors"
	"fmt"
)

// Kinds of failure beyond "failed", for a command's exit code: errors.Is(err, ErrRefused).
var (
	// ErrRefused: not allowed now — a daemon holds a directory, the store is in use, a
	// member of the cluster answers, a restore would overwrite a store.
	ErrRefused = errors.New("refused")
	// ErrBadInput: what the caller named is not usable — no such directory, a store's own
	// directory instead of a member's, a backup file that exists already.
	ErrBadInput = errors.New("bad input")
)

// kindError is an error of a kind, with its own message.
type kindError struct {
	kind error
	msg  string
}

func (e *kindError) Error() string        { return e.msg }
func (e *kindError) Is(target error) bool { return target == e.kind }

func refused(format string, args ...any) error {
	return &kindError{kind: ErrRefused, msg: fmt.Sprintf(format, args...)}
}

func badInput(format string, args ...any) error {
	return &kindError{kind: ErrBadInput, msg: fmt.Sprintf(format, args...)}
}
