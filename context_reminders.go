package shardmesh

import (
	"context"
	"fmt"
	"time"

	"github.com/shardmesh/shardmesh/node"
)

// Reminder is a durable reminder of an entity as stored: its name, when it fires next
// (Due), its period (Every, 0 for one-shot) and its message (Payload, in the type's message
// codec).
type Reminder = node.Reminder

// ReminderFiring says which reminder a message comes from (Context.Firing): its name, when
// it was scheduled to fire and when it did.
type ReminderFiring = node.Firing

// RemindAfter registers the durable reminder name of this entity (replacing one of the same
// name): once, after d, the entity receives msg, a value of the type's message type M, and
// Context.Firing tells which reminder fired. The reminder is stored with the entity's shard
// on a quorum of members before RemindAfter returns; it fires even when the entity is
// passivated (it starts on it) and after its shard moved or its member died (on the new
// home). Delivery is at least once: a firing whose message was not handled (the entity
// returned an error, panicked or stopped, or its member died) fires again.
func (c *Context) RemindAfter(ctx context.Context, name string, d time.Duration, msg any) error {
	if err := c.checkMessage("reminder "+name, msg); err != nil {
		return err
	}
	return c.c.RemindAfter(ctx, name, d, msg)
}

// RemindEvery registers the periodic durable reminder name: first after first, then every
// period (periods missed while no member could fire it are skipped, not caught up).
func (c *Context) RemindEvery(ctx context.Context, name string, first, period time.Duration, msg any) error {
	if err := c.checkMessage("reminder "+name, msg); err != nil {
		return err
	}
	return c.c.RemindEvery(ctx, name, first, period, msg)
}

// CancelReminder removes the durable reminder name (nothing when there is none).
func (c *Context) CancelReminder(ctx context.Context, name string) error {
	return c.c.CancelReminder(ctx, name)
}

// Reminders lists this entity's durable reminders, by name.
func (c *Context) Reminders(ctx context.Context) ([]Reminder, error) { return c.c.Reminders(ctx) }

// Firing returns the reminder whose message the entity is handling, or nil for any other
// message.
func (c *Context) Firing() *ReminderFiring { return c.c.Firing() }

// StartSingleTimer sends msg (a value of the type's message type) to this incarnation once,
// after d, replacing a timer of the same key: Akka's TimerScheduler. Timers live in memory
// and die with the incarnation (passivation, handoff, a crash); use a reminder for what must
// survive them.
func (c *Context) StartSingleTimer(key string, msg any, d time.Duration) error {
	if err := c.checkMessage("timer "+key, msg); err != nil {
		return err
	}
	c.c.StartSingleTimer(key, msg, d)
	return nil
}

// StartTimerAtFixedRate sends msg to this incarnation every interval until cancelled,
// replacing a timer of the same key.
func (c *Context) StartTimerAtFixedRate(key string, msg any, interval time.Duration) error {
	if err := c.checkMessage("timer "+key, msg); err != nil {
		return err
	}
	c.c.StartTimerAtFixedRate(key, msg, interval)
	return nil
}

// IsTimerActive reports whether timer key is armed (a single timer until its message is
// handled).
func (c *Context) IsTimerActive(key string) bool { return c.c.IsTimerActive(key) }

// CancelTimer cancels timer key: its message is not handled, even if it is already queued.
func (c *Context) CancelTimer(key string) { c.c.CancelTimer(key) }

// CancelAllTimers cancels every timer of this incarnation.
func (c *Context) CancelAllTimers() { c.c.CancelAllTimers() }

// TimerKey returns the key of the timer whose message the entity is handling ("" for any
// other message).
func (c *Context) TimerKey() string { return c.c.TimerKey() }

func (c *Context) checkMessage(what string, msg any) error {
	if c.accepts != nil && !c.accepts(msg) {
		return fmt.Errorf("%s of %s: the message is a %T, not the type's message type", what, c.TypeName(), msg)
	}
	return nil
}
