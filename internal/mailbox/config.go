package mailbox

import (
	"fmt"
	"log/slog"
	"runtime"
)

// Config configures a Pool.
type Config struct {
	// Workers is the number of worker goroutines. Default 2 × GOMAXPROCS: one handler per
	// CPU may block briefly (a store write, a lock) without leaving that CPU idle, while
	// few enough workers sleep that waking them stays rare (with CPU-bound handlers, 4 ×
	// GOMAXPROCS measured up to 1.5× slower than 1× on 2 cores).
	Workers int
	// Throughput is how many messages a worker hands to one mailbox before putting it back
	// at the tail of the run queue (Akka's dispatcher throughput). Default 32. A larger value
	// favours throughput of busy entities, a smaller one the latency of the others.
	Throughput int
	// OnPanic is told about a panic that Handler.Failed itself raised, with the panic value
	// and the stack; the worker carries on. Panics of Receive and of the functions given to
	// Do and DoFirst go to Handler.Failed instead. Default: log it to Logger at error level.
	OnPanic func(r any, stack []byte)
	// Logger receives the default OnPanic report. Default slog.Default().
	Logger *slog.Logger
}

// DefaultConfig returns the defaults documented on Config's fields.
func DefaultConfig() Config {
	c := Config{}
	if err := c.Validate(); err != nil {
		panic("mailbox: default config invalid: " + err.Error())
	}
	return c
}

// Validate fills zero fields with their defaults and rejects negative ones.
func (c *Config) Validate() error {
	if c.Workers < 0 {
		return fmt.Errorf("mailbox: Workers %d: must be ≥ 0 (0: 2 × GOMAXPROCS)", c.Workers)
	}
	if c.Throughput < 0 {
		return fmt.Errorf("mailbox: Throughput %d: must be ≥ 0 (0: 32)", c.Throughput)
	}
	if c.Workers == 0 {
		c.Workers = 2 * runtime.GOMAXPROCS(0)
	}
	if c.Throughput == 0 {
		c.Throughput = 32
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.OnPanic == nil {
		log := c.Logger
		c.OnPanic = func(r any, stack []byte) {
			log.Error("mailbox: Handler.Failed panicked", "panic", r, "stack", string(stack))
		}
	}
	return nil
}
