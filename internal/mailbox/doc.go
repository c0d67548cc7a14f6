// Package mailbox is the entity executor of shardmesh: one mailbox per live entity, a shared
// run queue and a fixed pool of worker goroutines, so that a member can hold a million
// entities while an idle one costs no goroutine and about 80 bytes plus the size of one
// message (96 bytes for messages of type any).
//
// The shard state machine decides which entity gets a message and when an entity starts or
// stops; this package only runs what it is given. A runtime embeds a Mailbox in its entity
// value, initialises it with the entity type's Group and the entity's Handler, and calls
// Enqueue. Enqueueing to an idle mailbox puts it on the Pool's run queue; a worker takes it
// and calls Handler.Receive for up to Config.Throughput messages before putting it back at the
// tail of the run queue, so one busy entity cannot starve the others.
//
// # Guarantees
//
//   - Exclusivity: at most one goroutine runs a mailbox's handler (Receive, Failed, and the
//     functions given to Do and DoFirst) at any time, and each call happens after the
//     previous one returned.
//   - Order: messages are handled in the order Enqueue accepted them; so messages that one
//     goroutine enqueues to one mailbox are handled in the order it enqueued them. Do runs
//     its function after every message accepted before it; DoFirst before every message not
//     yet started.
//   - No loss: every accepted message is either handled exactly once or returned exactly once
//     by Close. Enqueue refuses a message with an error (ErrClosed, ErrFull, ErrStopped)
//     rather than drop it.
//   - Failure isolation: a panic in a handler is recovered, reported to Handler.Failed on the
//     entity's turn, and the worker carries on.
//
// # Costs
//
// Enqueue takes the mailbox's mutex and, only when the mailbox was idle, the pool's. A
// message that finds its mailbox empty is stored inline in the Mailbox; messages queued
// behind it go into fixed-size segments recycled through the Group. So the steady state
// allocates nothing per message, and an idle mailbox holds no segment at all.
package mailbox
