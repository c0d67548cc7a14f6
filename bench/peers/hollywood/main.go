// Command hollywood runs the remote tell workload (package workload) on Hollywood: two
// engines in one process with the DRPC remote on loopback.
package main

import (
	"fmt"
	"strconv"
	"time"

	"github.com/anthdm/hollywood/actor"
	"github.com/anthdm/hollywood/remote"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/shardmesh/shardmesh/bench/peers/workload"
)

// runHollywood: two Hollywood engines with their DRPC remote on loopback; the receiving
// engine hosts the targets, the sending one sends with Engine.Send.
func runHollywood(w workload.Workload) (float64, error) {
	start := func() (*actor.Engine, *remote.Remote, error) {
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
	recv, recvRemote, err := start()
	if err != nil {
		return 0, err
	}
	defer func() { recvRemote.Stop().Wait() }()
	send, sendRemote, err := start()
	if err != nil {
		return 0, err
	}
	defer func() { sendRemote.Stop().Wait() }()

	var processed workload.Counter
	pids := make([]*actor.PID, w.Targets)
	for i := range pids {
		pids[i] = recv.SpawnFunc(func(c *actor.Context) {
			if m, ok := c.Message().(*wrapperspb.BytesValue); ok && len(m.Value) == workload.PayloadSize {
				processed.N.Add(1)
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
			return 0, fmt.Errorf("warm-up: %d of %d targets reached", processed.N.Load(), len(pids))
		}
		time.Sleep(time.Millisecond)
	}
	return w.Drive(&processed, func(target, _ int) { send.Send(pids[target], msg) })
}

func main() {
	workload.Main("hollywood", "github.com/anthdm/hollywood v1.0.5", runHollywood)
}
