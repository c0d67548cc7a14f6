// Command protoactor runs the remote tell workload (package workload) on Proto.Actor Go:
// two actor systems in one process with gRPC remoting on loopback.
package main

import (
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/remote"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/shardmesh/shardmesh/bench/peers/workload"
)

// runProtoActor: two Proto.Actor systems with gRPC remoting on loopback; the receiving
// system hosts the targets, the sending one sends from its root context.
func runProtoActor(w workload.Workload) (float64, error) {
	quiet := actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger {
		return slog.New(slog.NewTextHandler(discard{}, nil))
	})
	start := func() (*actor.ActorSystem, *remote.Remote, int, error) {
		port, err := workload.FreePort()
		if err != nil {
			return nil, nil, 0, err
		}
		sys := actor.NewActorSystem(quiet)
		r := remote.NewRemote(sys, remote.Configure("127.0.0.1", port))
		r.Start()
		return sys, r, port, nil
	}
	recvSys, recvRemote, port, err := start()
	if err != nil {
		return 0, err
	}
	defer recvRemote.Shutdown(false)
	sendSys, sendRemote, _, err := start()
	if err != nil {
		return 0, err
	}
	defer sendRemote.Shutdown(false)

	var processed workload.Counter
	props := actor.PropsFromFunc(func(c actor.Context) {
		if m, ok := c.Message().(*wrapperspb.BytesValue); ok && len(m.Value) == workload.PayloadSize {
			processed.N.Add(1)
		}
	})
	address := "127.0.0.1:" + strconv.Itoa(port)
	pids := make([]*actor.PID, w.Targets)
	for i := range pids {
		name := "target-" + strconv.Itoa(i)
		if _, err := recvSys.Root.SpawnNamed(props, name); err != nil {
			return 0, fmt.Errorf("spawn %s: %w", name, err)
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
			return 0, fmt.Errorf("warm-up: %d of %d targets reached", processed.N.Load(), len(pids))
		}
		time.Sleep(time.Millisecond)
	}
	return w.Drive(&processed, func(target, _ int) { sendSys.Root.Send(pids[target], msg) })
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

func main() {
	workload.Main("protoactor", "github.com/asynkron/protoactor-go v0.0.0-20240822202345-3c0e61ca19c9", runProtoActor)
}
