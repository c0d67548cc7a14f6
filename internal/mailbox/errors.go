package mailbox

import "errors"

// Errors returned by Enqueue, Do and DoFirst. None of them means the message was taken: the
// caller still owns it and decides what to do (re-route it, buffer it for the entity's next
// incarnation, count a drop and tell the sender).
var (
	// ErrClosed: the mailbox was closed (its entity stopped).
	ErrClosed = errors.New("mailbox closed")
	// ErrFull: the mailbox already holds its Group's Capacity of messages.
	ErrFull = errors.New("mailbox full")
	// ErrStopped: the mailbox's Pool was closed and runs nothing any more.
	ErrStopped = errors.New("mailbox pool stopped")
	// ErrGoexit is the failure reported to Handler.Failed when a handler called
	// runtime.Goexit instead of returning.
	ErrGoexit = errors.New("handler called runtime.Goexit")
)
