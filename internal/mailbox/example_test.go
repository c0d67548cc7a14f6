package mailbox_test

import (
	"context"
	"fmt"

	"github.com/shardmesh/shardmesh/internal/mailbox"
)

// entity is how a runtime uses a Mailbox: embedded in its entity value, which is also the
// Handler, so that a million entities cost no closure and no goroutine each.
type entity struct {
	mb      mailbox.Mailbox[string]
	seen    []string
	started chan string   // told when a message starts, for the examples to follow
	hold    chan struct{} // "slow" waits for it
}

func newEntity(g *mailbox.Group[string]) *entity {
	e := &entity{started: make(chan string, 10), hold: make(chan struct{})}
	e.mb.Init(g, e)
	return e
}

func (e *entity) Receive(msg string) {
	e.started <- msg
	if msg == "slow" {
		<-e.hold
	}
	e.seen = append(e.seen, msg)
}

// Failed stops the entity; a runtime would report the failure to the shard, which decides
// whether and when to restart it, with the returned messages buffered.
func (e *entity) Failed(r any, _ []byte) {
	rest := e.mb.Close(nil)
	fmt.Println("failed:", r, "returned:", rest)
}

// A graceful stop: the stop signal runs after the messages queued before it, closes the
// mailbox on the entity's own turn, and gets back what arrived after it.
func Example() {
	pool, err := mailbox.NewPool(mailbox.DefaultConfig())
	if err != nil {
		panic(err)
	}
	defer func() { _ = pool.Close(context.Background()) }()
	group, err := mailbox.NewGroup[string](pool, mailbox.GroupConfig{Capacity: 1000})
	if err != nil {
		panic(err)
	}

	e := newEntity(group)
	_ = e.mb.Enqueue("slow") // the entity is busy with this one while the rest arrive
	_ = e.mb.Enqueue("a")
	stopped := make(chan []string, 1)
	_ = e.mb.Do(func() { stopped <- e.mb.Close(nil) })
	_ = e.mb.Enqueue("b") // after the stop signal: handed back, for the next incarnation
	close(e.hold)

	rest := <-stopped
	fmt.Println("handled:", e.seen, "returned:", rest)
	fmt.Println("later:", e.mb.Enqueue("c"))
	// Output:
	// handled: [slow a] returned: [b]
	// later: mailbox closed
}

// A forced stop: the entity never gets to its stop message. Close hands back the queue at
// once; done tells when the call still in progress has returned, after which a new
// incarnation may start without two running at once.
func Example_forcedStop() {
	pool, err := mailbox.NewPool(mailbox.DefaultConfig())
	if err != nil {
		panic(err)
	}
	defer func() { _ = pool.Close(context.Background()) }()
	group, err := mailbox.NewGroup[string](pool, mailbox.GroupConfig{})
	if err != nil {
		panic(err)
	}

	e := newEntity(group)
	_ = e.mb.Enqueue("slow")
	<-e.started // stuck in "slow"
	_ = e.mb.Enqueue("x")
	_ = e.mb.Do(func() { fmt.Println("never runs") })
	finished := make(chan struct{})
	rest := e.mb.Close(func() { close(finished) })
	fmt.Println("returned at once:", rest)

	close(e.hold) // the stuck call returns at last
	<-finished
	fmt.Println("handled:", e.seen)
	// Output:
	// returned at once: [x]
	// handled: [slow]
}
