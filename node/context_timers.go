package node

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// An incarnation's reminders and timers, as its EntityContext offers them. Reminders are
// durable (core_reminders.go): each call waits until the shard's home has stored the change
// on a write quorum. Timers live in memory and die with the incarnation (core_timers.go).

// RemindAfter registers (or replaces) the durable reminder name: once, after d, the entity
// receives msg (a value of its type's message type) with Firing set. Call it on the
// entity's turn.
func (c *EntityContext) RemindAfter(ctx context.Context, name string, d time.Duration, msg any) error {
	return c.register(ctx, name, d, 0, msg)
}

// RemindEvery registers (or replaces) the periodic durable reminder name: first after
// first, then every period.
func (c *EntityContext) RemindEvery(ctx context.Context, name string, first, period time.Duration, msg any) error {
	if period <= 0 {
		return fmt.Errorf("reminder %s: the period %v must be positive", name, period)
	}
	return c.register(ctx, name, first, period, msg)
}

func (c *EntityContext) register(ctx context.Context, name string, after, every time.Duration, msg any) error {
	if err := checkReminderName(name); err != nil {
		return err
	}
	if after < 0 {
		after = 0
	}
	spec := c.home.spec
	if spec == nil {
		return errNoReminders
	}
	payload, err := safeEncode(func() ([]byte, error) { return spec.EncodeMessage(msg) })
	if err != nil {
		return fmt.Errorf("reminder %s: encode its message for %s: %w", name, c.Type(), err)
	}
	r := c.reminder(name)
	r.Every, r.Payload = every, payload
	_, err = c.e.Remind(ctx, ReminderOp{Kind: RemindRegister, Reminder: r, After: after, Epoch: c.Epoch})
	return err
}

// CancelReminder cancels the durable reminder name (no error when there is none).
func (c *EntityContext) CancelReminder(ctx context.Context, name string) error {
	if err := checkReminderName(name); err != nil {
		return err
	}
	_, err := c.e.Remind(ctx, ReminderOp{Kind: RemindCancel, Reminder: c.reminder(name), Epoch: c.Epoch})
	return err
}

// Reminders lists the entity's durable reminders, by name.
func (c *EntityContext) Reminders(ctx context.Context) ([]Reminder, error) {
	return c.e.Remind(ctx, ReminderOp{Kind: RemindList, Reminder: c.reminder(""), Epoch: c.Epoch})
}

func (c *EntityContext) reminder(name string) Reminder {
	return Reminder{Type: c.Type(), Shard: c.Shard, Entity: c.Entity, Name: name}
}

// Firing returns the reminder whose message the entity is handling, or nil for any other
// message.
func (c *EntityContext) Firing() *Firing {
	if c.ext == nil {
		return nil
	}
	return c.ext.firing
}

// TimerKey returns the key of the in-memory timer whose message the entity is handling
// ("" for any other message).
func (c *EntityContext) TimerKey() string {
	if c.ext == nil {
		return ""
	}
	return c.ext.timerKey
}

// StartSingleTimer sends msg to this incarnation once, after d; a timer of the same key is
// replaced. Timers die with the incarnation.
func (c *EntityContext) StartSingleTimer(key string, msg any, d time.Duration) {
	c.startTimer(key, msg, d, 0)
}

// StartTimerAtFixedRate sends msg to this incarnation every interval (the first after
// interval); a timer of the same key is replaced.
func (c *EntityContext) StartTimerAtFixedRate(key string, msg any, interval time.Duration) {
	if interval <= 0 {
		interval = time.Millisecond
	}
	c.startTimer(key, msg, interval, interval)
}

// IsTimerActive reports whether the timer key is armed (a single timer until its message is
// handled).
func (c *EntityContext) IsTimerActive(key string) bool {
	if c.ext == nil {
		return false
	}
	_, ok := c.ext.timers[key]
	return ok
}

// CancelTimer cancels the timer key: its message is not handled, even if already queued.
func (c *EntityContext) CancelTimer(key string) {
	if c.ext == nil {
		return
	}
	if _, ok := c.ext.timers[key]; !ok {
		return
	}
	delete(c.ext.timers, key)
	c.e.Timer(TimerOp{Type: c.Type(), Shard: c.Shard, Entity: c.Entity, Key: key, Cancel: true})
}

// CancelAllTimers cancels every timer of this incarnation.
func (c *EntityContext) CancelAllTimers() {
	if c.ext == nil {
		return
	}
	for key := range c.ext.timers {
		c.CancelTimer(key)
	}
}

func (c *EntityContext) startTimer(key string, msg any, after, every time.Duration) {
	x := c.x()
	if x.timers == nil {
		x.timers = map[string]uint64{}
	}
	x.timerGen++
	x.timers[key] = x.timerGen
	c.e.Timer(TimerOp{Type: c.Type(), Shard: c.Shard, Entity: c.Entity, Key: key, Gen: x.timerGen, Msg: msg, After: after, Every: every})
}

// takeTimer reports whether a timer's message m is still wanted: its timer is armed with
// the same generation. A single timer is spent.
func (c *EntityContext) takeTimer(m *Message) bool {
	tm := m.ext.timer
	if c.ext == nil {
		return false
	}
	if gen, ok := c.ext.timers[tm.key]; !ok || gen != tm.gen {
		return false
	}
	if !tm.periodic {
		delete(c.ext.timers, tm.key)
	}
	return true
}

// timerMark marks a timer's message: its key and generation, and whether it repeats.
type timerMark struct {
	key      string
	gen      uint64
	periodic bool
}

// errNoReminders: an entity runtime without reminders (the simulation's entities).
var errNoReminders = errors.New("this entity runtime keeps no reminders")
