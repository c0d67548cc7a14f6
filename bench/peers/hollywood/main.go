// Command hollywood runs the remote tell and ask workloads (package workload) on Hollywood:
// two engines in one process with the DRPC remote on loopback.
package main

import (
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/anthdm/hollywood/actor"
	"github.com/anthdm/hollywood/remote"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/shardmesh/shardmesh/bench/peers/workload"
)

// start: two Hollywood engines with their DRPC remote on loopback; the receiving engine
// hosts the targets (which count the tells and answer the asks), the sending one sends with
// Engine.Send and Engine.Request. stop shuts both down.
func start(w workload.Workload, processed *workload.Counter) (send *actor.Engine, pids []*actor.PID, stop func(), err error) {
	var stops []func()
	stop = func() {
		for _, f := range slices.Backward(stops) {
			f()
		}
	}
	startEngine := func() (*actor.Engine, *remote.Remote, error) {
		port, err := workload.FreePort()
		if err != nil {
			return nil, nil, err
		}
		r := remote.New("127.0.0.1:"+strconv.Itoa(port), remote.NewConfig())
		e, err := actor.NewEngine(actor.NewEngineConfig().WithRemote(r))
		if err != nil {
			return nil, nil, err
		}
		return e, r, nil
	}
	recv, recvRemote, err := startEngine()
	if err != nil {
		return nil, nil, stop, err
	}
	stops = append(stops, func() { recvRemote.Stop().Wait() })
	send, sendRemote, err := startEngine()
	if err != nil {
		return nil, nil, stop, err
	}
	stops = append(stops, func() { sendRemote.Stop().Wait() })

	pids = make([]*actor.PID, w.Targets)
	for i := range pids {
		pids[i] = recv.SpawnFunc(func(c *actor.Context) {
			if m, ok := c.Message().(*wrapperspb.BytesValue); ok {
				switch len(m.Value) {
				case workload.PayloadSize:
					processed.N.Add(1)
				case workload.AskPayloadSize:
					c.Respond(m)
				}
			}
		}, "target", actor.WithID(strconv.Itoa(i)))
	}
	processed.N.Store(0)
	msg := &wrapperspb.BytesValue{Value: w.Payload}
	for _, pid := range pids {
		send.Send(pid, msg)
	}
	deadline := time.Now().Add(30 * time.Second)
	for processed.N.Load() < int64(len(pids)) {
		if time.Now().After(deadline) {
			return nil, nil, stop, fmt.Errorf("warm-up: %d of %d targets reached", processed.N.Load(), len(pids))
		}
		time.Sleep(time.Millisecond)
	}
	return send, pids, stop, nil
}

// tell runs the remote tell workload.
func tell(w workload.Workload) (float64, error) {
	var processed workload.Counter
	send, pids, stop, err := start(w, &processed)
	defer stop()
	if err != nil {
		return 0, err
	}
	msg := &wrapperspb.BytesValue{Value: w.Payload}
	return w.Drive(&processed, func(target, _ int) { send.Send(pids[target], msg) })
}

// ask runs the remote ask workload: Engine.Request, answered with Respond.
func ask(w workload.Workload) (workload.Latencies, error) {
	var processed workload.Counter
	send, pids, stop, err := start(w, &processed)
	defer stop()
	if err != nil {
		return nil, err
	}
	msg := &wrapperspb.BytesValue{Value: make([]byte, workload.AskPayloadSize)}
	return w.Asks(func(target int) error {
		reply, err := send.Request(pids[target], msg, 5*time.Second).Result()
		if err != nil {
			return err
		}
		if r, ok := reply.(*wrapperspb.BytesValue); !ok || len(r.Value) != workload.AskPayloadSize {
			return fmt.Errorf("unexpected reply %T %v", reply, reply)
		}
		return nil
	})
}

func main() {
	workload.Main("hollywood", "github.com/anthdm/hollywood v1.0.5", tell, ask)
}
