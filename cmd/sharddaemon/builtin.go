package main

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/shardmesh/shardmesh"
)

// The built-in entity types, for demos, tests and benchmarks. Their messages are text, so
// shardctl tell/ask can send them as typed.

// counter keeps a number: "inc [n]", "dec [n]", "get", and "inc-after DURATION", which
// registers a one-shot durable reminder that sends it "inc" after DURATION (so an operator
// can try reminders from the CLI); every reply is the value after. The
// number is durable state: loaded on the incarnation's first message, saved on a quorum of
// members before a change is answered, so an acknowledged inc survives handoffs, kill -9 and
// full-cluster restarts.
type counter struct {
	n      int64
	loaded bool
	// journal, when set (--entity-journal), gets the incarnation's start, stop and every
	// acknowledged change; journalErr is a failed start record, refused on every message.
	journal    *journal
	journalErr error
}

// newCounter starts a counter incarnation, recording its start in j (when not nil).
func newCounter(ctx *shardmesh.Context, j *journal) *counter {
	c := &counter{journal: j}
	c.journalErr = j.record(c.rec(ctx, "start"))
	return c
}

func (c *counter) rec(ctx *shardmesh.Context, event string) JournalRecord {
	return JournalRecord{Event: event, Type: ctx.TypeName(), Entity: ctx.EntityID(), Node: ctx.Node(), Epoch: ctx.Epoch(), Value: c.n}
}

// stateTimeout bounds the counter's state loads and saves.
const stateTimeout = 10 * time.Second

func (c *counter) Receive(ctx *shardmesh.Context, msg string) (int64, error) {
	if msg == journalStop {
		ctx.Stop()
		return c.n, c.journal.record(c.rec(ctx, "stop"))
	}
	if c.journalErr != nil {
		return c.n, c.journalErr
	}
	sctx, cancel := context.WithTimeout(context.Background(), stateTimeout)
	defer cancel()
	if !c.loaded {
		b, err := ctx.LoadState(sctx)
		if err != nil {
			return 0, err
		}
		c.n, c.loaded = 0, true
		if b != nil {
			if c.n, err = strconv.ParseInt(string(b), 10, 64); err != nil {
				c.loaded = false
				return 0, fmt.Errorf("counter %s: stored state %q is not a number", ctx.EntityID(), b)
			}
		}
	}
	if d, ok, err := parseIncAfter(msg); ok || err != nil {
		if err == nil {
			err = ctx.RemindAfter(sctx, fmt.Sprintf("inc-after-%d", time.Now().UnixNano()), d, "inc")
		}
		return c.n, err
	}
	next, err := c.apply(msg)
	if err != nil || next == c.n {
		return c.n, err
	}
	began := monoNow()
	if err := ctx.SaveState(sctx, strconv.AppendInt(nil, next, 10)); err != nil {
		c.loaded = false // the write may have landed on some members: read it again next time
		if f := ctx.Firing(); f != nil {
			// The reminder fires again (at least once): if this write landed, its change
			// counts twice. The journal says so, for the chaos checker's attempts.
			r := c.rec(ctx, "unsure")
			r.Reminder = f.Name
			_ = c.journal.record(r)
		}
		return c.n, err
	}
	c.n = next
	r := c.rec(ctx, "ack")
	r.Began = began
	if f := ctx.Firing(); f != nil {
		r.Reminder = f.Name
	}
	return c.n, c.journal.record(r)
}

// apply returns the counter's value after msg. A change that would take the value past
// the range of int64 is refused: the counter never wraps.
func (c *counter) apply(msg string) (int64, error) {
	op, by, err := parseCounterOp(msg)
	if err != nil {
		return c.n, err
	}
	switch {
	case op == "get":
		return c.n, nil
	case by > 0 && c.n > math.MaxInt64-by, by < 0 && c.n < math.MinInt64-by:
		return c.n, fmt.Errorf("counter: %s would take %d past the range of a 64-bit integer; nothing changed", strings.TrimSpace(msg), c.n)
	}
	return c.n + by, nil
}

// parseIncAfter reads "inc-after DURATION" (ok false for any other message).
func parseIncAfter(msg string) (d time.Duration, ok bool, err error) {
	op, arg, _ := strings.Cut(strings.TrimSpace(msg), " ")
	if op != "inc-after" {
		return 0, false, nil
	}
	if d, err = time.ParseDuration(strings.TrimSpace(arg)); err != nil || d < 0 {
		return 0, true, fmt.Errorf("counter: inc-after %q: want a duration such as 5s", strings.TrimSpace(arg))
	}
	return d, true, nil
}

// parseCounterOp reads a counter message: "inc [n]", "dec [n]" (as inc -n) or "get".
func parseCounterOp(msg string) (op string, by int64, err error) {
	op, arg, _ := strings.Cut(strings.TrimSpace(msg), " ")
	by = 1
	if arg = strings.TrimSpace(arg); arg != "" {
		if by, err = strconv.ParseInt(arg, 10, 64); err != nil {
			return "", 0, fmt.Errorf("counter: %q is not a 64-bit integer", arg)
		}
	}
	switch {
	case op == "get" && arg == "":
		return op, 0, nil
	case op == "inc":
		return op, by, nil
	case op == "dec" && by != math.MinInt64:
		return op, -by, nil
	case op == "dec":
		return "", 0, fmt.Errorf("counter: dec %d cannot be negated", by)
	}
	return "", 0, fmt.Errorf("counter: unknown command %q (inc [n], dec [n], get, inc-after DURATION)", msg)
}

// counterCodec is the counter's message codec: text, refused unless it is a counter
// command, so that shardctl tell of a misspelled one is refused where it enters the
// cluster instead of vanishing at the entity.
type counterCodec struct{ shardmesh.StringCodec }

func (counterCodec) Unmarshal(data []byte) (string, error) {
	msg := string(data)
	if msg == journalStop {
		return msg, nil
	}
	if _, ok, err := parseIncAfter(msg); ok {
		return msg, err
	}
	if _, _, err := parseCounterOp(msg); err != nil {
		return "", err
	}
	return msg, nil
}

// register holds a text value: "set V" stores V (the rest of the line), "get" answers it
// ("" until set); every reply is the value after. Durable like counter: a second durable
// type for tests of per-type data (remove-internal-data).
type register struct {
	v      string
	loaded bool
}

func (r *register) Receive(ctx *shardmesh.Context, msg string) (string, error) {
	sctx, cancel := context.WithTimeout(context.Background(), stateTimeout)
	defer cancel()
	if !r.loaded {
		b, err := ctx.LoadState(sctx)
		if err != nil {
			return "", err
		}
		r.v, r.loaded = string(b), true
	}
	op, arg, _ := strings.Cut(strings.TrimSpace(msg), " ")
	switch op {
	case "get":
		return r.v, nil
	case "set":
		if err := ctx.SaveState(sctx, []byte(arg)); err != nil {
			r.loaded = false
			return r.v, err
		}
		r.v = arg
		return r.v, nil
	}
	return r.v, fmt.Errorf("register: unknown command %q (set V, get)", op)
}

// echo answers with what it got, and where it lives.
type echo struct{}

func (echo) Receive(ctx *shardmesh.Context, msg string) (string, error) {
	return fmt.Sprintf("%s (entity %s, shard %s)", msg, ctx.EntityID(), ctx.ShardID()), nil
}

// stubborn ignores its stop message ("stop"): a handoff of its shard waits for it until
// the handoff timeout stops it by force — to see what `shardctl handoffs` shows then. It
// answers anything else with "pong".
type stubborn struct{}

func (stubborn) Receive(_ *shardmesh.Context, msg string) (string, error) {
	if msg == stubbornStop {
		return "", nil // ignored: it does not stop
	}
	return "pong", nil
}

const stubbornStop = "stop"

// builtinNames are the built-in entity types.
var builtinNames = []string{"counter", "echo", "register", "stubborn"}

// builtinTypes registers the named built-in entity types. With a journal, the counter
// records its incarnations' starts, stops and acknowledged changes in it, and is stopped
// with a stop message so that it can record the stop.
func builtinTypes(sys *shardmesh.System, names []string, j *journal) error {
	for _, name := range names {
		var err error
		switch name {
		case "counter":
			e := shardmesh.Entity[string, int64]{
				Key:          shardmesh.NewEntityTypeKey[string, int64]("counter"),
				New:          func(ctx *shardmesh.Context) shardmesh.Behavior[string, int64] { return newCounter(ctx, j) },
				MessageCodec: counterCodec{},
				ReplyCodec:   shardmesh.JSONCodec[int64]{},
			}
			if j != nil {
				stop := journalStop
				e.StopMessage = &stop
			}
			_, err = shardmesh.Init(sys, e)
		case "register":
			_, err = shardmesh.Init(sys, shardmesh.Entity[string, string]{
				Key:          shardmesh.NewEntityTypeKey[string, string]("register"),
				New:          func(*shardmesh.Context) shardmesh.Behavior[string, string] { return &register{} },
				MessageCodec: shardmesh.StringCodec{},
				ReplyCodec:   shardmesh.StringCodec{},
			})
		case "echo":
			_, err = shardmesh.Init(sys, shardmesh.Entity[string, string]{
				Key:          shardmesh.NewEntityTypeKey[string, string]("echo"),
				New:          func(*shardmesh.Context) shardmesh.Behavior[string, string] { return echo{} },
				MessageCodec: shardmesh.StringCodec{},
				ReplyCodec:   shardmesh.StringCodec{},
			})
		case "stubborn":
			stop := stubbornStop
			_, err = shardmesh.Init(sys, shardmesh.Entity[string, string]{
				Key:          shardmesh.NewEntityTypeKey[string, string]("stubborn"),
				New:          func(*shardmesh.Context) shardmesh.Behavior[string, string] { return stubborn{} },
				MessageCodec: shardmesh.StringCodec{},
				ReplyCodec:   shardmesh.StringCodec{},
				StopMessage:  &stop,
			})
		default:
			return fmt.Errorf("entity-types: unknown built-in type %q (%s)", name, strings.Join(builtinNames, ", "))
		}
		if err != nil {
			return fmt.Errorf("entity type %s: %w", name, err)
		}
	}
	return nil
}
