package wire

import (
	"google.golang.org/protobuf/encoding/protowire"
)

// Field numbers of pb.RegionEnvelope, pb.Deliver and pb.Reply (wire/pb/sharding.proto).
const (
	regionVersionField = 1
	regionDeliverField = 2
	regionReplyField   = 3

	deliverTypeField    = 1
	deliverShardField   = 2
	deliverEntityField  = 3
	deliverPayloadField = 4
	deliverHopsField    = 5
	deliverAskField     = 6
	deliverReplyToField = 7
	deliverStartField   = 8
	deliverEpochField   = 9
	deliverNotHomeField = 10
	deliverHomeField    = 11
	deliverHomeEpField  = 12
	deliverTraceField   = 13

	replyAskField     = 1
	replyPayloadField = 2
	replyErrorField   = 3
	replyCodeField    = 4
)

// Deliver is a message for an entity on /shardmesh/region/1. The byte slices of a decoded
// Deliver alias the frame: use or copy them before the frame handler returns.
type Deliver struct {
	Type    []byte
	Shard   []byte
	Entity  []byte
	Payload []byte
	Hops    uint8
	AskID   uint64 // 0 for a tell
	ReplyTo []byte // the member waiting for the reply
	Start   bool   // StartEntity: start the entity, deliver nothing
	// Epoch is the epoch of the home the sender forwarded it to (0: none given).
	Epoch uint64
	// NotHome: sent back by a member that is no longer that home, naming the home it knows
	// (Home, HomeEpoch; Home empty when it knows none): the sender routes it again.
	NotHome   bool
	Home      []byte
	HomeEpoch uint64
	// Trace is the sender's OpenTelemetry span context (25 bytes; nil: not traced).
	Trace []byte
}

// Reply answers an ask. Payload and Err alias the frame when decoded.
type Reply struct {
	AskID   uint64
	Payload []byte
	Err     []byte
	Code    uint32
}

// RegionKind says what a region frame holds.
type RegionKind uint8

// Kinds of region frames.
const (
	KindDeliver RegionKind = iota + 1
	KindReply
)

func deliverSize(d *Deliver) int {
	n := protowire.SizeTag(deliverTypeField) + protowire.SizeBytes(len(d.Type)) +
		protowire.SizeTag(deliverShardField) + protowire.SizeBytes(len(d.Shard)) +
		protowire.SizeTag(deliverEntityField) + protowire.SizeBytes(len(d.Entity)) +
		protowire.SizeTag(deliverPayloadField) + protowire.SizeBytes(len(d.Payload))
	if d.Hops != 0 {
		n += protowire.SizeTag(deliverHopsField) + protowire.SizeVarint(uint64(d.Hops))
	}
	if d.AskID != 0 {
		n += protowire.SizeTag(deliverAskField) + protowire.SizeVarint(d.AskID) +
			protowire.SizeTag(deliverReplyToField) + protowire.SizeBytes(len(d.ReplyTo))
	}
	if d.Start {
		n += protowire.SizeTag(deliverStartField) + 1
	}
	if d.Epoch != 0 {
		n += protowire.SizeTag(deliverEpochField) + protowire.SizeVarint(d.Epoch)
	}
	if d.NotHome {
		n += protowire.SizeTag(deliverNotHomeField) + 1 + protowire.SizeTag(deliverHomeField) + protowire.SizeBytes(len(d.Home)) +
			protowire.SizeTag(deliverHomeEpField) + protowire.SizeVarint(d.HomeEpoch)
	}
	if len(d.Trace) > 0 {
		n += protowire.SizeTag(deliverTraceField) + protowire.SizeBytes(len(d.Trace))
	}
	return n
}

// AppendDeliver appends the frame of d to dst without allocating beyond dst's growth.
func AppendDeliver(dst []byte, d *Deliver) []byte {
	dst = protowire.AppendTag(dst, regionVersionField, protowire.VarintType)
	dst = protowire.AppendVarint(dst, ProtocolVersion)
	dst = protowire.AppendTag(dst, regionDeliverField, protowire.BytesType)
	dst = protowire.AppendVarint(dst, uint64(deliverSize(d)))
	dst = appendBytes(dst, deliverTypeField, d.Type)
	dst = appendBytes(dst, deliverShardField, d.Shard)
	dst = appendBytes(dst, deliverEntityField, d.Entity)
	dst = appendBytes(dst, deliverPayloadField, d.Payload)
	if d.Hops != 0 {
		dst = protowire.AppendTag(dst, deliverHopsField, protowire.VarintType)
		dst = protowire.AppendVarint(dst, uint64(d.Hops))
	}
	if d.AskID != 0 {
		dst = protowire.AppendTag(dst, deliverAskField, protowire.VarintType)
		dst = protowire.AppendVarint(dst, d.AskID)
		dst = appendBytes(dst, deliverReplyToField, d.ReplyTo)
	}
	if d.Start {
		dst = protowire.AppendTag(dst, deliverStartField, protowire.VarintType)
		dst = protowire.AppendVarint(dst, 1)
	}
	if d.Epoch != 0 {
		dst = protowire.AppendTag(dst, deliverEpochField, protowire.VarintType)
		dst = protowire.AppendVarint(dst, d.Epoch)
	}
	if d.NotHome {
		dst = protowire.AppendTag(dst, deliverNotHomeField, protowire.VarintType)
		dst = protowire.AppendVarint(dst, 1)
		dst = appendBytes(dst, deliverHomeField, d.Home)
		dst = protowire.AppendTag(dst, deliverHomeEpField, protowire.VarintType)
		dst = protowire.AppendVarint(dst, d.HomeEpoch)
	}
	if len(d.Trace) > 0 {
		dst = appendBytes(dst, deliverTraceField, d.Trace)
	}
	return dst
}

// AppendReply appends the frame of r to dst.
func AppendReply(dst []byte, r *Reply) []byte {
	size := protowire.SizeTag(replyAskField) + protowire.SizeVarint(r.AskID)
	if len(r.Payload) > 0 {
		size += protowire.SizeTag(replyPayloadField) + protowire.SizeBytes(len(r.Payload))
	}
	if len(r.Err) > 0 {
		size += protowire.SizeTag(replyErrorField) + protowire.SizeBytes(len(r.Err))
	}
	if r.Code != 0 {
		size += protowire.SizeTag(replyCodeField) + protowire.SizeVarint(uint64(r.Code))
	}
	dst = protowire.AppendTag(dst, regionVersionField, protowire.VarintType)
	dst = protowire.AppendVarint(dst, ProtocolVersion)
	dst = protowire.AppendTag(dst, regionReplyField, protowire.BytesType)
	dst = protowire.AppendVarint(dst, uint64(size))
	dst = protowire.AppendTag(dst, replyAskField, protowire.VarintType)
	dst = protowire.AppendVarint(dst, r.AskID)
	if len(r.Payload) > 0 {
		dst = appendBytes(dst, replyPayloadField, r.Payload)
	}
	if len(r.Err) > 0 {
		dst = appendBytes(dst, replyErrorField, r.Err)
	}
	if r.Code != 0 {
		dst = protowire.AppendTag(dst, replyCodeField, protowire.VarintType)
		dst = protowire.AppendVarint(dst, uint64(r.Code))
	}
	return dst
}

func appendBytes(dst []byte, field protowire.Number, b []byte) []byte {
	dst = protowire.AppendTag(dst, field, protowire.BytesType)
	return protowire.AppendBytes(dst, b)
}

// DecodeRegion decodes a region frame into d or r (whichever it holds, reported by the
// kind), without allocating: the slices alias frame. Unknown fields are skipped, as protobuf
// requires; what the runtime relies on is validated.
func DecodeRegion(frame []byte, d *Deliver, r *Reply) (RegionKind, error) {
	var version uint64
	var kind RegionKind
	var body []byte
	for len(frame) > 0 {
		num, typ, n := protowire.ConsumeTag(frame)
		if n < 0 {
			return 0, malformed("region frame: %v", protowire.ParseError(n))
		}
		frame = frame[n:]
		switch {
		case num == regionVersionField && typ == protowire.VarintType:
			version, n = protowire.ConsumeVarint(frame)
		case (num == regionDeliverField || num == regionReplyField) && typ == protowire.BytesType:
			body, n = protowire.ConsumeBytes(frame)
			kind = KindDeliver
			if num == regionReplyField {
				kind = KindReply
			}
		default:
			n = protowire.ConsumeFieldValue(num, typ, frame)
		}
		if n < 0 {
			return 0, malformed("region frame: %v", protowire.ParseError(n))
		}
		frame = frame[n:]
	}
	if err := checkVersion("region", uint32(version)); err != nil {
		return 0, err
	}
	switch kind {
	case KindDeliver:
		return kind, decodeDeliver(body, d)
	case KindReply:
		return kind, decodeReply(body, r)
	}
	return 0, malformed("region frame carries no message")
}

// nextField consumes the first field of b: its number and wire type, its value (bytes or
// varint; other types are skipped) and what follows it.
func nextField(b []byte, msg string) (num protowire.Number, typ protowire.Type, v []byte, x uint64, rest []byte, err error) {
	num, typ, n := protowire.ConsumeTag(b)
	if n < 0 {
		return 0, 0, nil, 0, nil, malformed("%s: %v", msg, protowire.ParseError(n))
	}
	b = b[n:]
	switch typ {
	case protowire.BytesType:
		v, n = protowire.ConsumeBytes(b)
	case protowire.VarintType:
		x, n = protowire.ConsumeVarint(b)
	default:
		n = protowire.ConsumeFieldValue(num, typ, b)
	}
	if n < 0 {
		return 0, 0, nil, 0, nil, malformed("%s field %d: %v", msg, num, protowire.ParseError(n))
	}
	return num, typ, v, x, b[n:], nil
}

func decodeDeliver(b []byte, d *Deliver) error {
	*d = Deliver{}
	for len(b) > 0 {
		num, typ, v, x, rest, err := nextField(b, "deliver")
		if err != nil {
			return err
		}
		b = rest
		switch {
		case num == deliverTypeField && typ == protowire.BytesType:
			d.Type = v
		case num == deliverShardField && typ == protowire.BytesType:
			d.Shard = v
		case num == deliverEntityField && typ == protowire.BytesType:
			d.Entity = v
		case num == deliverPayloadField && typ == protowire.BytesType:
			d.Payload = v
		case num == deliverHopsField && typ == protowire.VarintType:
			if x > 255 {
				return malformed("deliver.hops = %d", x)
			}
			d.Hops = uint8(x)
		case num == deliverAskField && typ == protowire.VarintType:
			d.AskID = x
		case num == deliverReplyToField && typ == protowire.BytesType:
			d.ReplyTo = v
		case num == deliverStartField && typ == protowire.VarintType:
			d.Start = x != 0
		case num == deliverEpochField && typ == protowire.VarintType:
			d.Epoch = x
		case num == deliverNotHomeField && typ == protowire.VarintType:
			d.NotHome = x != 0
		case num == deliverHomeField && typ == protowire.BytesType:
			d.Home = v
		case num == deliverHomeEpField && typ == protowire.VarintType:
			d.HomeEpoch = x
		case num == deliverTraceField && typ == protowire.BytesType:
			d.Trace = v
		}
	}
	switch {
	case len(d.Type) == 0 || len(d.Type) > maxIDLen:
		return malformed("deliver.entity_type has %d bytes", len(d.Type))
	case len(d.Shard) == 0 || len(d.Shard) > maxIDLen:
		return malformed("deliver.shard has %d bytes", len(d.Shard))
	case len(d.Entity) == 0 || len(d.Entity) > maxStringLen:
		return malformed("deliver.entity has %d bytes", len(d.Entity))
	case d.AskID != 0 && (len(d.ReplyTo) == 0 || len(d.ReplyTo) > maxIDLen):
		return malformed("deliver.reply_to has %d bytes for an ask", len(d.ReplyTo))
	case len(d.Trace) > 64:
		return malformed("deliver.trace has %d bytes", len(d.Trace))
	case len(d.Home) > maxIDLen:
		return malformed("deliver.home has %d bytes", len(d.Home))
	case d.NotHome && d.Epoch == 0:
		return malformed("deliver.not_home without the epoch it refuses")
	}
	return nil
}

func decodeReply(b []byte, r *Reply) error {
	*r = Reply{}
	for len(b) > 0 {
		num, typ, v, x, rest, err := nextField(b, "reply")
		if err != nil {
			return err
		}
		b = rest
		switch {
		case num == replyAskField && typ == protowire.VarintType:
			r.AskID = x
		case num == replyPayloadField && typ == protowire.BytesType:
			r.Payload = v
		case num == replyErrorField && typ == protowire.BytesType:
			r.Err = v
		case num == replyCodeField && typ == protowire.VarintType:
			r.Code = uint32(x)
		}
	}
	if r.AskID == 0 {
		return malformed("reply.ask_id is missing")
	}
	return nil
}
