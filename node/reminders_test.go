package node

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/shardmesh/shardmesh/datadir"
	"github.com/shardmesh/shardmesh/remember"
)

// TestReminderRecordRoundTrip: a stored reminder reads back as written, its key naming the
// shard, the entity (which may hold any byte but 0) and the name.
func TestReminderRecordRoundTrip(t *testing.T) {
	due := time.Date(2026, 11, 26, 12, 0, 0, 5, time.UTC)
	r := Reminder{Type: "counter", Shard: "17", Entity: "user/1 ü", Name: "wake", Due: due, Every: time.Hour, Payload: []byte("inc")}
	rec := remember.Record{Key: reminderKey(r.Type, r.Shard, r.Entity, r.Name), Value: encodeReminder(&r), Version: remember.Version{Epoch: 9}}
	got, err := ParseReminder("counter", rec)
	if err != nil {
		t.Fatal(err)
	}
	if got.Shard != r.Shard || got.Entity != r.Entity || got.Name != r.Name || !got.Due.Equal(due) || got.Every != r.Every ||
		!bytes.Equal(got.Payload, r.Payload) || got.Epoch != 9 {
		t.Fatalf("read back %+v, wrote %+v", got, r)
	}
	for _, bad := range []remember.Record{
		{Key: reminderKey("echo", "1", "e", "n"), Value: rec.Value},                   // another type
		{Key: datadir.Key(datadir.FamilyReminder, "counter", "1"), Value: rec.Value},  // no entity or name
		{Key: rec.Key, Value: []byte("{")},                                            // value does not decode
		{Key: rec.Key, Value: []byte(`{"due":1,"every":-5,"payload":null}`)},          // negative period
		{Key: reminderKey("counter", "1", "e", "n"), Value: []byte(`{"due":"soon"}`)}, // wrong field type
	} {
		if _, err := ParseReminder("counter", bad); err == nil {
			t.Errorf("key %q value %q: read without an error", bad.Key, bad.Value)
		}
	}
}

// FuzzParseReminder: any stored record either reads as a reminder that writes back to the
// same key and an equal value, or is refused with an error; nothing panics.
func FuzzParseReminder(f *testing.F) {
	r := Reminder{Type: "counter", Shard: "3", Entity: "e", Name: "n", Due: time.Unix(0, 42), Every: time.Second, Payload: []byte("inc")}
	f.Add("3\x00e\x00n", encodeReminder(&r))
	f.Add("3\x00a\x00b\x00c", []byte(`{"due":0}`))
	f.Add("", []byte(`null`))
	f.Fuzz(func(t *testing.T, rest string, value []byte) {
		key := datadir.Prefix(datadir.FamilyReminder, "counter") + rest
		got, err := ParseReminder("counter", remember.Record{Key: key, Value: value})
		if err != nil {
			return
		}
		if got.Every < 0 || got.Payload == nil {
			t.Fatalf("read %+v: a negative period or a nil message", got)
		}
		if k := reminderKey(got.Type, got.Shard, got.Entity, got.Name); k != key {
			t.Fatalf("key %q reads as shard %q entity %q name %q, which make %q", key, got.Shard, got.Entity, got.Name, k)
		}
		again, err := ParseReminder("counter", remember.Record{Key: key, Value: encodeReminder(&got)})
		if err != nil || !again.Due.Equal(got.Due) || again.Every != got.Every || !bytes.Equal(again.Payload, got.Payload) {
			t.Fatalf("%+v does not read back (%+v, %v)", got, again, err)
		}
	})
}

// TestNextDue: a periodic reminder fires next at the first period boundary after now;
// missed periods are skipped, not caught up.
func TestNextDue(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		now  time.Duration // after the scheduled time t0
		want time.Duration
	}{
		{0, 10 * time.Second},
		{3 * time.Second, 10 * time.Second},
		{10 * time.Second, 20 * time.Second}, // on a boundary: the next one
		{95 * time.Second, 100 * time.Second},
	} {
		if got := nextDue(t0, 10*time.Second, t0.Add(c.now)); !got.Equal(t0.Add(c.want)) {
			t.Errorf("fired %v after the due time: next at +%v, want +%v", c.now, got.Sub(t0), c.want)
		}
	}
}

func TestCheckReminderName(t *testing.T) {
	for name, want := range map[string]string{"": "empty", strings.Repeat("x", 257): "at most 256", "a\x00b": "0 byte"} {
		if err := checkReminderName(name); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("name %q: %v, want %q", name, err, want)
		}
	}
	if err := checkReminderName("wake-up ü"); err != nil {
		t.Error(err)
	}
}
