package shard

import (
	"testing"
	"time"
)

func leaseShard() *Shard[string] {
	return New[string](Config{Lease: Lease{Enabled: true, RetryInterval: time.Second}}, "1")
}

// deliverAll gives messages to the shard as the runtime does (StartAndDeliver and Deliver
// become outputs for the comparison).
func deliverAll(s *Shard[string], now time.Time, msgs ...[2]string) {
	for _, m := range msgs {
		switch d, _ := s.Deliver(now, EntityID(m[0]), m[1]); d {
		case StartAndDeliver:
			s.emit(StartEntity{Entity: EntityID(m[0])})
			s.emit(DeliverToEntity[string]{Entity: EntityID(m[0]), Msg: m[1]})
		case Deliver:
			s.emit(DeliverToEntity[string]{Entity: EntityID(m[0]), Msg: m[1]})
		}
	}
}

func TestNoEntityWithoutTheLease(t *testing.T) {
	s := leaseShard()
	expect(t, s, "shard.AcquireLease{}")
	deliverAll(s, t0, [2]string{"a", "m1"})
	expect(t, s, "") // waits for the lease
	s.LeaseAcquired(t0, false)
	s.Tick(t0.Add(500 * time.Millisecond))
	expect(t, s, "") // not before lease-retry-interval
	s.Tick(t0.Add(time.Second))
	expect(t, s, "shard.AcquireLease{}")
	s.LeaseAcquired(t0.Add(time.Second), true)
	expect(t, s, "start a\ndeliver a m1")
}

func TestLeaseLostStopsEntitiesAndWaitsForItAgain(t *testing.T) {
	s := leaseShard()
	s.Ready()
	s.LeaseAcquired(t0, true)
	deliverAll(s, t0, [2]string{"a", "m1"}, [2]string{"b", "m2"})
	s.Ready()
	s.LeaseLost(t0)
	expect(t, s, "shard.ForceStop{Entity:a}\nshard.ForceStop{Entity:b}")
	deliverAll(s, t0, [2]string{"a", "m3"})
	s.EntityStopped(t0, "a", []string{"queued"})
	s.Tick(t0.Add(2 * time.Second))
	expect(t, s, "") // b has not stopped yet: no new tenure before
	s.EntityStopped(t0, "b", nil)
	s.Tick(t0.Add(2 * time.Second))
	expect(t, s, "shard.AcquireLease{}")
	s.LeaseAcquired(t0.Add(2*time.Second), true)
	expect(t, s, "start a\ndeliver a queued\ndeliver a m3")
}

func TestHandoffReleasesTheLease(t *testing.T) {
	s := leaseShard()
	s.Ready()
	s.LeaseAcquired(t0, true)
	s.Stop(t0)
	expect(t, s, "shard.ReleaseLease{}\nshard.Stopped{Entities:0}")
	// An acquisition answered after the shard stopped is given back.
	s2 := leaseShard()
	s2.Ready()
	s2.Stop(t0)
	s2.Ready()
	s2.LeaseAcquired(t0, true)
	expect(t, s2, "shard.ReleaseLease{}")
}
