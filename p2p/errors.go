package p2p

import "errors"

// Sentinel errors. Functions wrap them with context (peer, protocol, file); test for them
// with errors.Is.
var (
	// ErrFrameTooLarge: a frame is larger than Config.MaxFrameSize. Send and WriteFrame
	// return it before queuing anything; a reader returns it, without allocating the
	// announced size, when a peer announces such a frame (the stream is then reset).
	ErrFrameTooLarge = errors.New("frame too large")

	// ErrMalformedFrame: a peer sent bytes that are not a valid frame (a length prefix
	// that overflows, or a stream that ends inside a frame). The stream is reset.
	ErrMalformedFrame = errors.New("malformed frame")

	// ErrQueueFull: the outbound queue of the stream to that peer and protocol holds
	// Config.SendQueue frames or Config.SendQueueBytes bytes; the frame was not queued.
	ErrQueueFull = errors.New("send queue full")

	// ErrStreamBroken: frames that Send had queued were dropped because their stream
	// broke (the peer went away, reset the stream, or stopped reading for
	// Config.WriteTimeout) before they were written. Flush reports it.
	ErrStreamBroken = errors.New("stream broken, queued frames dropped")

	// ErrHandshake: a connection to the peer was made but the peer refused it during the
	// handshake. The usual cause is a different cluster key (or none on one side) or an
	// allow-list on the peer that does not name us.
	ErrHandshake = errors.New("handshake with peer failed")

	// ErrHandshakeTimeout: the peer accepted the TCP connection but the handshake did not
	// complete in time: it is hung, stopped or overloaded (or flooded), or it is not a
	// shardmesh peer. Not a sign of a wrong cluster key, which fails at once (ErrHandshake),
	// unless only one side has a key.
	ErrHandshakeTimeout = errors.New("handshake did not complete in time")

	// ErrPeerIDMismatch: the peer listening at the address is not the one its /p2p/ id
	// names (its identity changed, or the address now belongs to another member).
	ErrPeerIDMismatch = errors.New("peer id mismatch")

	// ErrNotAllowed: our own allow-list (Config.AllowPeers) does not name the peer.
	ErrNotAllowed = errors.New("peer not on the allow-list")

	// ErrNoPeerID: an address given to Connect does not end in /p2p/<peer id>.
	ErrNoPeerID = errors.New("address has no /p2p/<peer id>")

	// ErrKeyFile: an identity or cluster key file is missing, unreadable or malformed.
	ErrKeyFile = errors.New("bad key file")

	// ErrInsecureKeyFile: an identity or cluster key file is readable or writable by
	// group or others; fix with chmod 600.
	ErrInsecureKeyFile = errors.New("key file is accessible by group or others")

	// ErrOpenMesh: a host without a cluster key would listen on an address other than
	// loopback, and Config.OpenMesh does not say that an open mesh is wanted.
	ErrOpenMesh = errors.New("open mesh refused")

	// ErrClosed: the host is closed.
	ErrClosed = errors.New("host closed")
	// ErrWouldBlock: TrySend would have had to dial, open a stream or wait for room.
	ErrWouldBlock = errors.New("send would block")
)
