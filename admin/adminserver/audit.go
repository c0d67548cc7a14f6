package adminserver

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/shardmesh/shardmesh/admin"
	"github.com/shardmesh/shardmesh/admin/adminpb"
	"github.com/shardmesh/shardmesh/node"
	"github.com/shardmesh/shardmesh/trust"
)

// The audit log: every admin call a member carries out (or refuses to a caller that
// signed it) is logged there and recorded in the replicated store (Backend.RecordAudit),
// with the caller, the call, its arguments, the outcome and the request as signed, so
// that `shardctl audit` lists the admin actions of the whole cluster from any member, and
// that member verifies each against its own admin set.

const (
	// auditWriteTimeout bounds the write of one record.
	auditWriteTimeout = 5 * time.Second
	// Refusals are recorded at most this often on average (and this many at once): a caller
	// who signs with a fresh identity each time must not fill the store.
	auditRefusalEvery = time.Second
	auditRefusalBurst = 10
	// defaultAuditLimit caps the records of one answer.
	defaultAuditLimit = 1000
)

// auditLog rate-limits the records of refused calls.
type auditLog struct {
	mu     sync.Mutex
	tokens float64
	last   time.Time
}

// took logs a signed admin call this member carried out (or failed to) and records it: after
// the call's answer, or, for a shutdown, as it begins.
func (s *Server) took(c caller, name string, req *adminpb.Request, last *adminpb.Response, at time.Time) {
	rec := &adminpb.AuditRecord{AtUnixMs: at.UnixMilli(), Member: s.backend.Self(), Caller: c.name(), Call: name, Args: callArgs(req),
		Outcome: outcome(last), Signed: c.admin.Raw}
	s.log.Info("admin call", "call", name, "caller", rec.Caller, "via", c.admin.Via, "args", rec.Args, "outcome", rec.Outcome)
	s.record(rec)
}

// refusal records a signed call refused here, within the refusal rate.
func (a *auditLog) refusal(s *Server, signed []byte, resp *adminpb.Response) {
	now := time.Now()
	a.mu.Lock()
	a.tokens = min(auditRefusalBurst, a.tokens+now.Sub(a.last).Seconds()/auditRefusalEvery.Seconds())
	a.last = now
	ok := a.tokens >= 1
	if ok {
		a.tokens--
	}
	a.mu.Unlock()
	if !ok {
		return
	}
	rec := &adminpb.AuditRecord{AtUnixMs: now.UnixMilli(), Member: s.backend.Self(), Outcome: outcome(resp), Signed: signed}
	if sg, err := trust.OpenSigned(signed); err == nil && sg.Signer != "" {
		rec.Caller = sg.Signer.String()
		if inner, err := admin.DecodeSignedBody(sg.Body); err == nil {
			rec.Call, _ = admin.CallInfo(inner)
			rec.Args = callArgs(inner)
		}
	}
	s.record(rec)
}

// record writes rec to the store (within auditWriteTimeout).
func (s *Server) record(rec *adminpb.AuditRecord) {
	value, err := proto.Marshal(rec)
	if err != nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), auditWriteTimeout)
	defer cancel()
	if err := s.backend.RecordAudit(ctx, time.UnixMilli(rec.AtUnixMs), value); err != nil {
		s.log.Warn("audit record not stored", "call", rec.Call, "caller", rec.Caller, "err", err)
	}
}

// outcome says how a call ended, from its last response.
func outcome(last *adminpb.Response) string {
	if last == nil {
		return "no answer"
	}
	msg := strings.TrimPrefix(last.Error, "refused: ")
	switch last.Code {
	case adminpb.Code_OK:
		return "ok"
	case adminpb.Code_PARTIAL:
		return "partial: " + msg
	case adminpb.Code_REFUSED:
		return "refused: " + msg
	case adminpb.Code_BAD_REQUEST:
		return "bad request: " + msg
	}
	return "failed: " + msg
}

// callArgs renders the arguments of a request's call as JSON.
func callArgs(req *adminpb.Request) string {
	m := req.ProtoReflect()
	fd := m.WhichOneof(m.Descriptor().Oneofs().ByName("call"))
	if fd == nil {
		return "{}"
	}
	out, err := protojson.MarshalOptions{UseProtoNames: true}.Marshal(m.Get(fd).Message().Interface())
	if err != nil {
		return "{}"
	}
	return strings.Join(strings.Fields(string(out)), " ") // protojson adds random spaces
}

// auditRecords answers an audit query: the records of the store, oldest first, each
// verified again against this member's admin set, as of when it was made.
func (s *Server) auditRecords(ctx context.Context, req *adminpb.AuditRequest) *adminpb.Response {
	ctx, cancel := context.WithTimeout(ctx, askTimeout)
	defer cancel()
	values, err := s.backend.AuditRecords(ctx)
	var partial *node.PartialError
	if err != nil && !errors.As(err, &partial) {
		return callError(err)
	}
	out := &adminpb.AuditResponse{Node: s.backend.Self()}
	for _, v := range values {
		var rec adminpb.AuditRecord
		if proto.Unmarshal(v, &rec) != nil || rec.AtUnixMs < req.SinceUnixMs {
			continue
		}
		if _, err := s.policy.VerifyRequest(time.UnixMilli(rec.AtUnixMs), rec.Signed); err != nil {
			rec.VerifyError = err.Error()
		} else {
			rec.Verified = true
		}
		out.Records = append(out.Records, &rec)
	}
	slices.SortStableFunc(out.Records, func(a, b *adminpb.AuditRecord) int { return cmp.Compare(a.AtUnixMs, b.AtUnixMs) })
	limit := int(req.Limit)
	if limit == 0 {
		limit = defaultAuditLimit
	}
	if len(out.Records) > limit {
		out.Records, out.Truncated = out.Records[len(out.Records)-limit:], true
	}
	resp := &adminpb.Response{Result: &adminpb.Response_Audit{Audit: out}}
	if partial != nil {
		out.Missing = nodeIDs(partial.Missing)
		resp.Code = adminpb.Code_PARTIAL
		resp.Error = fmt.Sprintf("partial audit log: %s", metaCopies(out.Missing))
	}
	return resp
}
