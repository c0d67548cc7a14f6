package node

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/shardmesh/shardmesh/datadir"
	"github.com/shardmesh/shardmesh/remember"
	"github.com/shardmesh/shardmesh/shard"
)

// Durable reminders: a named, persistent timer of an entity, kept with its shard's durable
// records (datadir.FamilyReminder: rm␀TYPE␀SHARD␀ENTITY␀NAME) and fired by the shard's home
// (core_reminders.go). A due reminder starts a passivated entity; after a failover or a
// rebalance the new home loads the shard's reminders, claims them with its epoch and fires
// them. Delivery is at least once: a reminder is rescheduled (or, one-shot, removed) only
// after its message was handled, with a write fenced by the shard's epoch.

// Reminder is a durable reminder as stored.
type Reminder struct {
	Type   string         `json:"type"`
	Shard  shard.ID       `json:"shard"`
	Entity shard.EntityID `json:"entity"`
	Name   string         `json:"name"`
	// Due is when it fires next.
	Due time.Time `json:"due"`
	// Every is the period of a periodic reminder; 0 for a one-shot reminder.
	Every time.Duration `json:"every,omitempty"`
	// Payload is the message it delivers, in the entity type's message codec.
	Payload []byte `json:"payload"`
	// Epoch is the shard allocation epoch of the home that wrote it last.
	Epoch uint64 `json:"epoch"`
}

// Firing is what a reminder's message carries to the entity (EntityContext.Firing): which
// reminder fired, when it was scheduled to and when it did.
type Firing struct {
	Name      string
	Scheduled time.Time
	Fired     time.Time
	// Every is the period of a periodic reminder (0: one-shot).
	Every time.Duration
}

// Errors of reminders.
var (
	// ErrReminderName: a reminder name is empty, too long or contains a 0 byte.
	ErrReminderName = errors.New("invalid reminder name")
	// ErrNotHome: the shard is no longer (or not yet) hosted here with the incarnation's
	// epoch: a newer home owns it.
	ErrNotHome = errors.New("this member is not the shard's home with this epoch")
)

// maxReminderName bounds a reminder's name, in bytes.
const maxReminderName = 256

// checkReminderName refuses a name that cannot be a key's last part.
func checkReminderName(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("%w: empty", ErrReminderName)
	case len(name) > maxReminderName:
		return fmt.Errorf("%w: %d bytes, at most %d", ErrReminderName, len(name), maxReminderName)
	case strings.Contains(name, datadir.Sep):
		return fmt.Errorf("%w %q: contains a 0 byte", ErrReminderName, name)
	}
	return nil
}

// reminderKey is the store key of a reminder.
func reminderKey(typ string, s shard.ID, e shard.EntityID, name string) string {
	return datadir.Key(datadir.FamilyReminder, typ, string(s), string(e), name)
}

// isReminderKey reports whether key is a reminder's store key.
func isReminderKey(key string) bool {
	return strings.HasPrefix(key, datadir.FamilyReminder+datadir.Sep)
}

// reminderValue is a reminder's stored value.
type reminderValue struct {
	Due     int64  `json:"due"`             // Unix nanoseconds
	Every   int64  `json:"every,omitempty"` // nanoseconds
	Payload []byte `json:"payload"`
}

// encodeReminder returns the stored value of r.
func encodeReminder(r *Reminder) []byte {
	b, _ := json.Marshal(reminderValue{Due: r.Due.UnixNano(), Every: int64(r.Every), Payload: r.Payload}) // plain fields: cannot fail
	return b
}

// ParseReminder reads a stored reminder record of entity type typ: its key names the shard,
// the entity and the reminder. An error names what is wrong.
func ParseReminder(typ string, rec remember.Record) (Reminder, error) {
	prefix := datadir.Prefix(datadir.FamilyReminder, typ)
	rest, ok := strings.CutPrefix(rec.Key, prefix)
	if !ok {
		return Reminder{}, fmt.Errorf("reminder key %q is not one of type %s", rec.Key, typ)
	}
	s, rest, ok1 := strings.Cut(rest, datadir.Sep)
	i := strings.LastIndex(rest, datadir.Sep)
	if !ok1 || i < 0 {
		return Reminder{}, fmt.Errorf("reminder key %q: want rm␀TYPE␀SHARD␀ENTITY␀NAME", rec.Key)
	}
	r := Reminder{Type: typ, Shard: shard.ID(s), Entity: shard.EntityID(rest[:i]), Name: rest[i+1:], Epoch: rec.Version.Epoch}
	var v reminderValue
	if err := json.Unmarshal(rec.Value, &v); err != nil {
		return Reminder{}, fmt.Errorf("reminder %s of %s %s: stored value does not decode: %w", r.Name, typ, r.Entity, err)
	}
	if v.Every < 0 {
		return Reminder{}, fmt.Errorf("reminder %s of %s %s: negative period %d", r.Name, typ, r.Entity, v.Every)
	}
	r.Due, r.Every, r.Payload = time.Unix(0, v.Due), time.Duration(v.Every), nonNil(v.Payload)
	return r, nil
}

// ReminderOpKind says what a ReminderOp does.
type ReminderOpKind uint8

// The reminder operations.
const (
	RemindRegister ReminderOpKind = iota + 1 // register (or replace) Reminder
	RemindCancel                             // cancel the reminder named Name
	RemindList                               // list the entity's reminders
)

// nextDue is when a periodic reminder scheduled at due and fired at now fires next: the
// first period boundary after now (missed periods are skipped, not caught up in a burst).
func nextDue(due time.Time, every time.Duration, now time.Time) time.Time {
	next := due.Add(every)
	if !next.After(now) {
		n := now.Sub(due)/every + 1
		next = due.Add(n * every)
	}
	return next
}

// Reminders reads the durable reminders of entity type typ (of entity, when not empty),
// sorted by shard, entity and name: for operators (shardctl reminders). An entity's are read
// from a quorum of its shard's replica set; a whole type's span the shards' sets and are read
// from every member: with a *PartialError, alongside what came, when some did not answer.
// Records that do not parse are logged and skipped.
func (n *Node) Reminders(ctx context.Context, typ, entity string) ([]Reminder, error) {
	t := n.core.Registered(typ)
	if t == nil {
		return nil, unknownType(typ)
	}
	prefix := datadir.Prefix(datadir.FamilyReminder, typ)
	if entity != "" {
		prefix = datadir.Prefix(datadir.FamilyReminder, typ, string(t.spec.Extractor.ShardID(shard.EntityID(entity))), entity)
	}
	recs, err := n.scanUnitOrAll(ctx, prefix, "reminders of "+typ)
	var partial *PartialError
	if err != nil && !errors.As(err, &partial) {
		return nil, fmt.Errorf("read the reminders of %s: %w", typ, err)
	}
	out := make([]Reminder, 0, len(recs))
	for _, rec := range recs {
		r, err := ParseReminder(typ, rec)
		if err != nil {
			n.log.Warn("a stored reminder is skipped", "err", err)
			continue
		}
		if entity == "" || string(r.Entity) == entity {
			out = append(out, r)
		}
	}
	if partial != nil {
		return out, partial
	}
	return out, nil
}
