package remember

import (
	"errors"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
)

// newTestRound is a write round of ops over replicas a, b and c needing need answers,
// without a network: answers are fed by hand.
func newTestRound(need int, ops ...*writeOp) *writeRound {
	s := &Store{calls: newCalls(), cfg: Config{Timeout: time.Second}}
	r := &writeRound{s: s, ops: ops, asked: []peer.ID{"a", "b", "c"}, answered: map[peer.ID]bool{}, release: func() {}}
	for i, op := range ops {
		op.need = need
		for _, w := range op.writes {
			r.recs = append(r.recs, entry{rec: Record{Key: w.Key, Version: Version{Epoch: w.Epoch, Counter: 1, Writer: "a"}}})
			r.owner = append(r.owner, int32(i))
		}
	}
	return r
}

func testOp(ws ...Write) *writeOp { return &writeOp{writes: ws, done: make(chan error, 1)} }

// outcome returns whether op is decided, and its error.
func outcome(op *writeOp) (done bool, err error) {
	select {
	case err := <-op.done:
		return true, err
	default:
		return false, nil
	}
}

func TestWriteRoundDecisions(t *testing.T) {
	// Everyone needed; one replica refuses the second op: it fails at once, the first waits.
	ok, fenced := testOp(Write{Key: "x", Epoch: 2}), testOp(Write{Key: "y", Epoch: 2}, Write{Key: "z", Epoch: 2})
	r := newTestRound(3, ok, fenced)
	r.answer("b", []refusal{{index: 2, need: 5}}, nil)
	if done, err := outcome(fenced); !done || !errors.Is(err, ErrFenced) {
		t.Fatalf("fenced op: %v %v", err, done)
	} else if fe := err.(*FencedError); fe.Key != "z" || fe.Epoch != 2 || fe.Need != 5 {
		t.Errorf("fenced error %+v", fe)
	}
	if done, _ := outcome(ok); done {
		t.Fatal("the other op decided after one answer of three")
	}
	r.answer("a", nil, nil)
	r.answer("a", nil, nil) // a duplicate counts once
	if done, _ := outcome(ok); done {
		t.Fatal("decided after two distinct answers of three")
	}
	r.answer("c", nil, nil)
	if done, err := outcome(ok); !done || err != nil {
		t.Errorf("ok op: %v %v", err, done)
	}
	if !r.finished {
		t.Error("round not finished with every op decided")
	}

	// Two of three needed: a refusal does not fail an op two others store.
	op := testOp(Write{Key: "x", Epoch: 1})
	r = newTestRound(2, op)
	r.answer("a", []refusal{{index: 0, need: 3}}, nil)
	r.answer("b", nil, nil)
	if done, _ := outcome(op); done {
		t.Fatal("decided with one ok, one refusal and one outstanding of two needed")
	}
	r.answer("c", nil, nil)
	if _, err := outcome(op); err != nil {
		t.Errorf("two of three stored: %v", err)
	}

	// A replica's error and a silent replica: a quorum error naming both.
	op = testOp(Write{Key: "x"})
	r = newTestRound(2, op)
	r.answer("a", nil, nil)
	r.answer("b", nil, errors.New("disk full"))
	r.expire()
	_, err := outcome(op)
	var qe *QuorumError
	if !errors.As(err, &qe) || qe.Got != 1 || qe.Need != 2 || len(qe.Failed) != 1 || qe.Failed[0] != "b" ||
		len(qe.Missing) != 1 || qe.Missing[0] != "c" || qe.Cause == nil {
		t.Errorf("quorum error %+v", err)
	}
	// Answers from a replica not asked, or after the end, change nothing.
	r.answer("d", nil, nil)
	r.answer("c", nil, nil)
}

// A refusal that arrives after an op failed does not change the error its caller holds
// (the race detector found a late refusal raising FencedError.Need under a caller reading
// it).
func TestLateRefusalLeavesADecidedErrorAlone(t *testing.T) {
	op, other := testOp(Write{Key: "x", Epoch: 2}), testOp(Write{Key: "y", Epoch: 2})
	r := newTestRound(3, op, other) // other keeps the round open
	r.answer("a", []refusal{{index: 0, need: 5}}, nil)
	done, err := outcome(op)
	var fe *FencedError
	if !done || !errors.As(err, &fe) || fe.Need != 5 {
		t.Fatalf("first refusal: %v %v", done, err)
	}
	r.answer("b", []refusal{{index: 0, need: 9}}, nil)
	if fe.Need != 5 {
		t.Errorf("a late refusal changed the decided error: need %d", fe.Need)
	}
}
