// Package p2p is shardmesh's network edge: a libp2p host with a persistent Ed25519
// identity, an optional private-network key (PSK) and peer allow-list, optional mDNS
// discovery, gossipsub topics with authenticated origins, long-lived framed streams for
// the hot path (one outbound stream per peer and protocol, frames batched by a writer
// goroutine), and one-stream-per-call request/response streams.
//
// Transport: TCP only, secured with Noise and multiplexed with yamux. A pre-shared key
// works only over TCP in go-libp2p, and keeping one transport with or without a key keeps
// behaviour and benchmarks identical in both modes.
//
// Frames on every stream are a uvarint length followed by that many bytes (see
// AppendFrame and FrameReader). Bad input from a peer — a malformed or oversized frame,
// a handler error — resets only that stream; it is logged with the peer id and counted
// in Stats, and never stops the host.
package p2p
