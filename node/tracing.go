package node

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/shardmesh/shardmesh/region"
)

// Tracing (Config.Tracing): OpenTelemetry spans of a message's way, with its trace context
// carried in the message across members (the region frame's trace field). Off (a nil
// tracer) it costs a nil check per message: the message carries no trace.
//
//   - shardmesh.ask TYPE / shardmesh.tell TYPE: the send, on the member it was made on
//     (client kind; an ask's span ends with its reply);
//   - shardmesh.route: the routing decision on each member the message passes (attribute
//     route: local, remote, buffered, refused);
//   - shardmesh.buffer (the shard's home is not known yet) or shardmesh.handoff.wait (its
//     shard is being handed off): how long the message waited in a region's buffer;
//   - shardmesh.receive TYPE: the entity's handling, on the shard's home;
//   - shardmesh.store.load / shardmesh.store.save: the store rounds of the entity's state
//     made while it handles the message.

// tracerName is the instrumentation scope of shardmesh's spans.
const tracerName = "github.com/shardmesh/shardmesh"

// msgTrace is a traced message's context: the span its next spans hang from, and the wait
// in a buffer in progress.
type msgTrace struct {
	sc   trace.SpanContext
	wait trace.Span
}

// startSend starts the span of a send on this member, from the caller's ctx, and marks m
// with it; nil when tracing is off.
func (c *Core) startSend(ctx context.Context, op, typ, id string, m *Message) trace.Span {
	if c.tracer == nil {
		return nil
	}
	_, span := c.tracer.Start(ctx, "shardmesh."+op+" "+typ, trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(attribute.String("shardmesh.type", typ), attribute.String("shardmesh.entity", id)))
	m.x().tr = &msgTrace{sc: span.SpanContext()}
	return span
}

// endSpan ends span (nil: tracing off) with err as its status.
func endSpan(span trace.Span, err error) {
	if span == nil {
		return
	}
	if err != nil {
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}

// traceRoute records the routing of a traced message at now, and starts its wait when it
// was buffered.
func (c *Core) traceRoute(now time.Time, typ string, env region.Envelope, m *Message, kind region.RouteKind) {
	tr := m.trace()
	ctx := trace.ContextWithSpanContext(context.Background(), tr.sc)
	route := [...]string{region.Buffered: "buffered", region.Local: "local", region.Forwarded: "remote", region.Refused: "refused"}[kind]
	_, span := c.tracer.Start(ctx, "shardmesh.route", trace.WithTimestamp(now), trace.WithAttributes(
		attribute.String("shardmesh.type", typ), attribute.String("shardmesh.shard", string(env.Shard)),
		attribute.String("shardmesh.route", route), attribute.String("shardmesh.member", string(c.self.Node))))
	span.End(trace.WithTimestamp(now))
	tr.sc = span.SpanContext()
	if kind != region.Buffered {
		return
	}
	name := "shardmesh.buffer"
	if r := c.eng.Region(typ); r != nil && r.HandingOff()[env.Shard] {
		name = "shardmesh.handoff.wait"
	}
	_, tr.wait = c.tracer.Start(trace.ContextWithSpanContext(context.Background(), tr.sc), name, trace.WithTimestamp(now),
		trace.WithAttributes(attribute.String("shardmesh.shard", string(env.Shard))))
}

// traceLeft ends a traced message's wait in a buffer: it was delivered, forwarded or
// refused at now.
func (c *Core) traceLeft(now time.Time, m *Message) {
	tr := m.trace()
	if tr == nil || tr.wait == nil {
		return
	}
	tr.wait.End(trace.WithTimestamp(now))
	tr.sc = tr.wait.SpanContext()
	tr.wait = nil
}

// traceBytes is a span context on the wire: the trace id, the span id and the flags (25
// bytes); nil for none.
func traceBytes(m *Message) []byte {
	tr := m.trace()
	if tr == nil || !tr.sc.IsValid() {
		return nil
	}
	tid, sid := tr.sc.TraceID(), tr.sc.SpanID()
	b := make([]byte, 0, 25)
	b = append(b, tid[:]...)
	b = append(b, sid[:]...)
	return append(b, byte(tr.sc.TraceFlags()))
}

// traceFrom reads a span context from the wire (a remote parent); false when b is not one.
func traceFrom(b []byte) (trace.SpanContext, bool) {
	if len(b) != 25 {
		return trace.SpanContext{}, false
	}
	var tid trace.TraceID
	var sid trace.SpanID
	copy(tid[:], b[:16])
	copy(sid[:], b[16:24])
	sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: trace.TraceFlags(b[24]), Remote: true})
	return sc, sc.IsValid()
}

// startReceive starts the span of an entity handling m (nil when m is not traced).
func (c *Core) startReceive(typ string, m *Message) trace.Span {
	tr := m.trace()
	if c.tracer == nil || tr == nil {
		return nil
	}
	_, span := c.tracer.Start(trace.ContextWithSpanContext(context.Background(), tr.sc), "shardmesh.receive "+typ,
		trace.WithSpanKind(trace.SpanKindServer), trace.WithAttributes(attribute.String("shardmesh.member", string(c.self.Node))))
	return span
}

// startStore starts the span of a store round of an entity handling a traced message.
func (c *Core) startStore(parent trace.Span, op string) trace.Span {
	if parent == nil {
		return nil
	}
	_, span := c.tracer.Start(trace.ContextWithSpan(context.Background(), parent), "shardmesh.store."+op)
	return span
}
