package shard

import (
	"errors"
	"testing"
	"time"
)

func rememberShard(r Remember) *Shard[string] {
	r.Enabled = true
	return New[string](Config{HandoffTimeout: 10 * time.Second, Remember: r}, "1")
}

func expect(t *testing.T, s *Shard[string], want string) {
	t.Helper()
	if got := render(s.Ready()); got != want {
		t.Fatalf("got:\n%s\nwant:\n%s", got, want)
	}
}

// TestRememberedShardLoadsThenStartsEverything: a shard that remembers first loads its set,
// holding messages; then every stored entity starts and the held messages follow in order.
func TestRememberedShardLoadsThenStartsEverything(t *testing.T) {
	s := rememberShard(Remember{})
	expect(t, s, "shard.LoadEntities{}")
	if d, _ := s.Deliver(t0, "b", "m1"); d != Waiting {
		t.Fatalf("while loading: %v", d)
	}
	s.Deliver(t0, "c", "m2")
	s.Loaded(t0, []EntityID{"b", "a"}, nil)
	expect(t, s, "start a\nstart b\ndeliver b m1\nshard.RememberEntity{Entity:c NewShard:false}")
	s.Remembered(t0, []EntityID{"c"}, nil)
	expect(t, s, "start c\ndeliver c m2")
	if d, _ := s.Deliver(t0, "c", "m3"); d != Deliver {
		t.Fatalf("after remembered: %v", d)
	}
}

// TestRememberStoreFailuresBackOff: a failed load or write is retried after
// shard-failure-backoff; the messages keep waiting.
func TestRememberStoreFailuresBackOff(t *testing.T) {
	s := rememberShard(Remember{FailureBackoff: 5 * time.Second})
	s.Ready()
	s.Deliver(t0, "a", "m1")
	s.Loaded(t0, nil, errors.New("no quorum"))
	s.Tick(t0.Add(4 * time.Second))
	expect(t, s, "")
	s.Tick(t0.Add(5 * time.Second))
	expect(t, s, "shard.LoadEntities{}")
	s.Loaded(t0.Add(5*time.Second), nil, nil)
	expect(t, s, "shard.RememberEntity{Entity:a NewShard:true}")
	s.Deliver(t0, "a", "m2")
	s.Remembered(t0.Add(5*time.Second), []EntityID{"a"}, errors.New("no quorum"))
	s.Tick(t0.Add(9 * time.Second))
	expect(t, s, "")
	s.Tick(t0.Add(10 * time.Second))
	expect(t, s, "shard.RememberEntity{Entity:a NewShard:true}")
	s.Remembered(t0.Add(10*time.Second), []EntityID{"a"}, nil)
	expect(t, s, "start a\ndeliver a m1\ndeliver a m2")
}

// TestRememberedPassivationAndSelfStop: a passivated entity leaves the set; one that stops
// by itself restarts after entity-restart-backoff, or on its next message.
func TestRememberedPassivationAndSelfStop(t *testing.T) {
	s := rememberShard(Remember{RestartBackoff: 3 * time.Second})
	s.Ready()
	s.Loaded(t0, []EntityID{"a", "b", "c"}, nil)
	s.Ready()
	s.Passivate("a")
	expect(t, s, "shard.StopEntity{Entity:a}")
	s.EntityStopped(t0, "a", nil)
	expect(t, s, "shard.ForgetEntity{Entity:a}")

	// Passivated while a message arrived: restarted at once, still remembered.
	s.Passivate("b")
	s.Deliver(t0, "b", "m1")
	s.Ready()
	s.EntityStopped(t0, "b", nil)
	expect(t, s, "start b\ndeliver b m1")

	// c stops by itself: back after the backoff.
	s.EntityStopped(t0, "c", nil)
	expect(t, s, "")
	s.Tick(t0.Add(2 * time.Second))
	expect(t, s, "")
	s.Tick(t0.Add(3 * time.Second))
	expect(t, s, "start c")
	// ... or on its next message, whichever comes first.
	s.EntityStopped(t0.Add(3*time.Second), "c", nil)
	if d, _ := s.Deliver(t0.Add(4*time.Second), "c", "m2"); d != StartAndDeliver {
		t.Fatalf("message during the backoff: %v", d)
	}
	s.Tick(t0.Add(10 * time.Second))
	expect(t, s, "")
}

// TestConstantRateRecovery: entity-recovery-strategy = constant starts number-of-entities
// per frequency; a message for one not yet started starts it at once.
func TestConstantRateRecovery(t *testing.T) {
	s := rememberShard(Remember{RecoveryFrequency: 100 * time.Millisecond, RecoveryBatch: 2})
	s.Ready()
	s.Loaded(t0, []EntityID{"a", "b", "c", "d", "e"}, nil)
	expect(t, s, "start a\nstart b")
	if d, _ := s.Deliver(t0, "e", "m1"); d != StartAndDeliver {
		t.Fatalf("message for a remembered entity not yet started: %v", d)
	}
	s.Tick(t0.Add(50 * time.Millisecond))
	expect(t, s, "")
	s.Tick(t0.Add(100 * time.Millisecond))
	expect(t, s, "start c\nstart d")
	s.Tick(t0.Add(200 * time.Millisecond))
	expect(t, s, "") // e started with its message
}

// TestRememberedShardHandsOff: stopping while loading gives back what it held; entities
// that wait to be stored or to restart have no incarnation to stop.
func TestRememberedShardHandsOff(t *testing.T) {
	s := rememberShard(Remember{})
	s.Ready()
	s.Deliver(t0, "a", "m1")
	s.Stop(t0)
	expect(t, s, "bounce [m1]\nshard.Stopped{Entities:0}")

	s = rememberShard(Remember{})
	s.Ready()
	s.Loaded(t0, []EntityID{"a"}, nil)
	s.Deliver(t0, "b", "m2")
	s.EntityStopped(t0, "a", nil) // a stopped by itself: waits for its backoff
	s.Ready()
	s.Stop(t0)
	expect(t, s, "bounce [m2]\nshard.Stopped{Entities:0}")
	s.Remembered(t0, []EntityID{"b"}, nil) // late: ignored
	expect(t, s, "")
}

// TestAdaptiveRecoveryStartsOnlyWhatIsGranted: with the adaptive strategy a loaded shard
// starts nothing by itself; Recover starts as many as granted, skipping entities a message
// started meanwhile (they cost no grant), and a handoff drops what still waits.
func TestAdaptiveRecoveryStartsOnlyWhatIsGranted(t *testing.T) {
	s := rememberShard(Remember{Adaptive: Adaptive{Enabled: true}, RecoveryFrequency: time.Millisecond})
	s.Ready()
	s.Loaded(t0, []EntityID{"a", "b", "c", "d", "e"}, nil)
	s.Tick(t0.Add(time.Second))
	expect(t, s, "")
	if got := s.RecoveryPending(); got != 5 {
		t.Fatalf("pending %d, want 5", got)
	}
	if got := s.Recover(2); got != 2 {
		t.Fatalf("Recover(2) started %d", got)
	}
	expect(t, s, "start a\nstart b")
	if d, _ := s.Deliver(t0, "c", "m1"); d != StartAndDeliver {
		t.Fatalf("message for a remembered entity not yet started: %v", d)
	}
	if got := s.Recover(2); got != 2 {
		t.Fatalf("Recover(2) started %d", got)
	}
	expect(t, s, "start d\nstart e")
	if got := s.RecoveryPending(); got != 0 {
		t.Fatalf("pending %d after all started", got)
	}

	s = rememberShard(Remember{Adaptive: Adaptive{Enabled: true}})
	s.Ready()
	s.Loaded(t0, []EntityID{"a", "b"}, nil)
	s.Stop(t0)
	s.Ready()
	if s.RecoveryPending() != 0 || s.Recover(5) != 0 {
		t.Fatal("a stopping shard still recovers")
	}
}

// TestConstantRateRecoveryKeepsItsCadence: a tick that comes late does not push the later
// batches back (the rate stays number-of-entities per frequency), and a long pause does not
// make a burst.
func TestConstantRateRecoveryKeepsItsCadence(t *testing.T) {
	s := rememberShard(Remember{RecoveryFrequency: 100 * time.Millisecond, RecoveryBatch: 1})
	s.Ready()
	s.Loaded(t0, []EntityID{"a", "b", "c", "d", "e", "f"}, nil)
	expect(t, s, "start a")
	s.Tick(t0.Add(130 * time.Millisecond))
	expect(t, s, "start b")
	s.Tick(t0.Add(200 * time.Millisecond))
	expect(t, s, "start c")
	s.Tick(t0.Add(2 * time.Second))
	expect(t, s, "start d")
	s.Tick(t0.Add(2050 * time.Millisecond))
	expect(t, s, "")
	s.Tick(t0.Add(2100 * time.Millisecond))
	expect(t, s, "start e")
}
