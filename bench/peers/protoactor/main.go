// Command protoactor runs the remote tell and ask workloads (package workload) on
// Proto.Actor Go: two actor systems in one process with gRPC remoting on loopback.
package main

import (
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/remote"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/shardmesh/shardmesh/bench/peers/workload"
)

// start: two Proto.Actor systems with gRPC remoting on loopback; the receiving system hosts
// the targets (which count the tells and answer the asks), the sending one sends from its
// root context. stop shuts both down.
func start(w workload.Workload, processed *workload.Counter) (s system, stop func(), err error) {
	var stops []func()
	stop = func() {
		for _, f := range slices.Backward(stops) {
			f()
		}
	}
	quiet := actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger {
		return slog.New(slog.NewTextHandler(discard{}, nil))
	})
	startSystem := func() (*actor.ActorSystem, *remote.Remote, int, error) {
		port, err := workload.FreePort()
		if err != nil {
			return nil, nil, 0, err
		}
		sys := actor.NewActorSystem(quiet)
		r := remote.NewRemote(sys, remote.Configure("127.0.0.1", port))
		r.Start()
		return sys, r, port, nil
	}
	recvSys, recvRemote, port, err := startSystem()
	if err != nil {
		return s, stop, err
	}
	stops = append(stops, func() { recvRemote.Shutdown(false) })
	sendSys, sendRemote, _, err := startSystem()
	if err != nil {
		return s, stop, err
	}
	stops = append(stops, func() { sendRemote.Shutdown(false) })

	props := actor.PropsFromFunc(func(c actor.Context) {
		if m, ok := c.Message().(*wrapperspb.BytesValue); ok {
			switch len(m.Value) {
			case workload.PayloadSize:
				processed.N.Add(1)
			case workload.AskPayloadSize:
				c.Respond(m)
			}
		}
	})
	address := "127.0.0.1:" + strconv.Itoa(port)
	pids := make([]*actor.PID, w.Targets)
	for i := range pids {
		name := "target-" + strconv.Itoa(i)
		if _, err := recvSys.Root.SpawnNamed(props, name); err != nil {
			return s, stop, fmt.Errorf("spawn %s: %w", name, err)
		}
		pids[i] = actor.NewPID(address, name)
	}
	// Warm: the connection is open and every target answers before the clock starts.
	processed.N.Store(0)
	msg := &wrapperspb.BytesValue{Value: w.Payload}
	for _, pid := range pids {
		sendSys.Root.Send(pid, msg)
	}
	deadline := time.Now().Add(30 * time.Second)
	for processed.N.Load() < int64(len(pids)) {
		if time.Now().After(deadline) {
			return s, stop, fmt.Errorf("warm-up: %d of %d targets reached", processed.N.Load(), len(pids))
		}
		time.Sleep(time.Millisecond)
	}
	return system{sendSys, pids}, stop, nil
}

// system is the sending side of two connected systems, and the targets' PIDs.
type system struct {
	send *actor.ActorSystem
	pids []*actor.PID
}

// tell runs the remote tell workload.
func tell(w workload.Workload) (float64, error) {
	var processed workload.Counter
	s, stop, err := start(w, &processed)
	defer stop()
	if err != nil {
		return 0, err
	}
	msg := &wrapperspb.BytesValue{Value: w.Payload}
	return w.Drive(&processed, func(target, _ int) { s.send.Root.Send(s.pids[target], msg) })
}

// ask runs the remote ask workload: RequestFuture, answered with Respond.
func ask(w workload.Workload) (workload.Latencies, error) {
	var processed workload.Counter
	s, stop, err := start(w, &processed)
	defer stop()
	if err != nil {
		return nil, err
	}
	msg := &wrapperspb.BytesValue{Value: make([]byte, workload.AskPayloadSize)}
	return w.Asks(func(target int) error {
		reply, err := s.send.Root.RequestFuture(s.pids[target], msg, 5*time.Second).Result()
		if err != nil {
			return err
		}
		if r, ok := reply.(*wrapperspb.BytesValue); !ok || len(r.Value) != workload.AskPayloadSize {
			return fmt.Errorf("unexpected reply %T %v", reply, reply)
		}
		return nil
	})
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

func main() {
	workload.Main("protoactor", "github.com/asynkron/protoactor-go v0.0.0-20240822202345-3c0e61ca19c9", tell, ask)
}
