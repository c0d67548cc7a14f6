package remember

import (
	"errors"
	"testing"
	"time"

	"github.com/shardmesh/shardmesh/wire"
	"github.com/shardmesh/shardmesh/wire/pb"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// roundMachine is machine "a" with replicas a, b and c needing need answers to a write,
// its frames and disk operations fed by hand.
func roundMachine(t *testing.T, need int) *Machine {
	t.Helper()
	m, err := NewMachine(MachineConfig{Self: "a", WriteMajorityPlus: AllMembers, MajorityMinCap: need, Timeout: time.Second,
		AntiEntropyInterval: -1}, DiskState{}, t0)
	if err != nil {
		t.Fatal(err)
	}
	m.SetReplicas([]NodeID{"a", "b", "c"})
	if need < 3 {
		m.cfg.WriteMajorityPlus = 0
	}
	return m
}

// roundOf starts one write round of calls (each a list of writes) and returns their ids,
// the round's request id and its local disk operation.
func roundOf(t *testing.T, m *Machine, calls ...[]Write) ([]CallID, uint64, DiskOp) {
	t.Helper()
	m.writeRounds = writeWindow // hold the calls back, then start them as one round
	var ids []CallID
	for _, ws := range calls {
		ids = append(ids, m.Write(t0, ws))
	}
	m.writeRounds = writeWindow - 1
	m.startWrites()
	m.writeRounds = 1 // this round alone
	rd := m.Ready()
	if len(rd.Disk) != 1 || len(rd.Sends) != 2 {
		t.Fatalf("one round: %d disk ops, %d sends", len(rd.Disk), len(rd.Sends))
	}
	env, err := wire.DecodeReplica(rd.Sends[0].Frame)
	if err != nil {
		t.Fatal(err)
	}
	return ids, env.RequestId, rd.Disk[0]
}

// ack feeds peer from's acknowledgement of request req, refusing the writes refused.
func ack(m *Machine, from NodeID, req uint64, errText string, refused ...refusal) {
	a := &pb.ReplicaWriteAck{Error: errText}
	for _, r := range refused {
		a.Refused = append(a.Refused, &pb.ReplicaRefusal{Index: uint32(r.index), Floor: r.need})
	}
	m.ReceiveEnvelope(t0, from, &pb.ReplicaEnvelope{RequestId: req, Msg: &pb.ReplicaEnvelope_WriteAck{WriteAck: a}})
}

// answers returns the answers the machine gave since the last call, by call.
func answers(m *Machine) map[CallID]Answer {
	out := map[CallID]Answer{}
	for _, a := range m.Ready().Answers {
		out[a.Call] = a
	}
	return out
}

func TestWriteRoundDecisions(t *testing.T) {
	// Everyone needed; one replica refuses the second call: it fails at once, the first waits.
	m := roundMachine(t, 3)
	ids, req, _ := roundOf(t, m, []Write{{Key: "x", Epoch: 2}}, []Write{{Key: "y", Epoch: 2}, {Key: "z", Epoch: 2}})
	ack(m, "b", req, "", refusal{index: 2, need: 5})
	got := answers(m)
	if a, ok := got[ids[1]]; !ok || !errors.Is(a.Err, ErrFenced) {
		t.Fatalf("fenced call: %+v", got)
	} else if fe := a.Err.(*FencedError); fe.Key != "z" || fe.Epoch != 2 || fe.Need != 5 {
		t.Errorf("fenced error %+v", fe)
	}
	if _, ok := got[ids[0]]; ok {
		t.Fatal("the other call decided after one answer of three")
	}
	ack(m, "c", req, "")
	ack(m, "c", req, "") // a duplicate counts once
	if len(answers(m)) != 0 {
		t.Fatal("decided after two distinct answers of three")
	}
	m.DiskDone(t0, DiskResult{ID: 1, applied: []applyResult{{}}})
	if a, ok := answers(m)[ids[0]]; !ok || a.Err != nil {
		t.Errorf("ok call: %+v", a)
	}
	if len(m.pending) != 0 || m.writeRounds != 0 {
		t.Errorf("round not finished with every call decided: %d pending, %d rounds", len(m.pending), m.writeRounds)
	}

	// Two of three needed: a refusal does not fail a call two others store.
	m = roundMachine(t, 2)
	ids, req, _ = roundOf(t, m, []Write{{Key: "x", Epoch: 1}})
	m.DiskDone(t0, DiskResult{ID: 1, applied: []applyResult{{refused: []refusal{{index: 0, need: 3}}}}})
	ack(m, "b", req, "")
	if len(answers(m)) != 0 {
		t.Fatal("decided with one ok, one refusal and one outstanding of two needed")
	}
	ack(m, "c", req, "")
	if a := answers(m)[ids[0]]; a.Err != nil {
		t.Errorf("two of three stored: %v", a.Err)
	}

	// A replica's error and a silent replica: a quorum error naming both.
	m = roundMachine(t, 2)
	ids, req, _ = roundOf(t, m, []Write{{Key: "x"}})
	m.DiskDone(t0, DiskResult{ID: 1, applied: []applyResult{{}}})
	ack(m, "b", req, "disk full")
	m.Tick(t0.Add(time.Second))
	var qe *QuorumError
	if err := answers(m)[ids[0]].Err; !errors.As(err, &qe) || qe.Got != 1 || qe.Need != 2 || len(qe.Failed) != 1 ||
		qe.Failed[0] != "b" || len(qe.Missing) != 1 || qe.Missing[0] != "c" || qe.Cause == nil {
		t.Errorf("quorum error %+v", err)
	}
	// Answers from a replica not asked, or after the end, change nothing.
	ack(m, "d", req, "")
	ack(m, "c", req, "")
	if len(answers(m)) != 0 || m.Stats().LateAnswers != 2 {
		t.Errorf("late answers: %d counted", m.Stats().LateAnswers)
	}
}

// A refusal that arrives after a call failed does not change the error its caller holds
// (the race detector found a late refusal raising FencedError.Need under a caller reading
// it, before the store was a machine).
func TestLateRefusalLeavesADecidedErrorAlone(t *testing.T) {
	m := roundMachine(t, 3)
	ids, req, _ := roundOf(t, m, []Write{{Key: "x", Epoch: 2}}, []Write{{Key: "y", Epoch: 2}}) // the second keeps the round open
	ack(m, "b", req, "", refusal{index: 0, need: 5})
	var fe *FencedError
	if err := answers(m)[ids[0]].Err; !errors.As(err, &fe) || fe.Need != 5 {
		t.Fatalf("first refusal: %v", err)
	}
	ack(m, "c", req, "", refusal{index: 0, need: 9})
	if fe.Need != 5 {
		t.Errorf("a late refusal changed the decided error: need %d", fe.Need)
	}
}
