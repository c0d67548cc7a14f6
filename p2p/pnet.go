package p2p

import (
	"bytes"
	"crypto/cipher"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/davidlazar/go-crypto/salsa20"
	pool "github.com/libp2p/go-buffer-pool"
	"github.com/libp2p/go-libp2p/core/pnet"
	manet "github.com/multiformats/go-multiaddr/net"
)

// The private network: libp2p's pre-shared key protocol (go-libp2p p2p/net/pnet, the same
// bytes on the wire), with one difference that lets the cluster key be rotated without
// downtime: a host accepts connections under several keys. Each side sends a random
// 24-byte nonce and then XORs everything with XSalsa20 under the key and its nonce. An
// inbound connection's key is found from the first bytes the dialer sends, which are known:
// multistream-select's header. A host dials with its first key only.

// multistreamHeader is what a libp2p dialer sends first, inside the private network: the
// length-prefixed multistream-select header.
var multistreamHeader = []byte("\x13/multistream/1.0.0\n")

// errWrongKey: an inbound connection is under none of the keys this host accepts.
var errWrongKey = errors.New("the peer's first bytes decrypt under none of this host's cluster keys: it holds another key, or none")

const nonceSize = 24

// protectedConn is a connection inside the private network.
type protectedConn struct {
	manet.Conn
	keys   [][32]byte // dial: the one key; accept: the keys accepted
	accept bool       // an inbound connection: its key is checked against the known header

	setup    sync.Once // chooses the key and the read stream
	setupErr error
	key      *[32]byte
	read     cipher.Stream
	pending  []byte // decrypted bytes read while choosing the key, not yet returned

	writeMu sync.Mutex
	write   cipher.Stream
}

func toKeys(psks []pnet.PSK) [][32]byte {
	out := make([][32]byte, len(psks))
	for i, p := range psks {
		copy(out[i][:], p)
	}
	return out
}

// dialProtected protects an outbound connection with key.
func dialProtected(c manet.Conn, key pnet.PSK) *protectedConn {
	return &protectedConn{Conn: c, keys: toKeys([]pnet.PSK{key})}
}

// acceptProtected protects an inbound connection under any of keys.
func acceptProtected(c manet.Conn, keys []pnet.PSK) *protectedConn {
	return &protectedConn{Conn: c, keys: toKeys(keys), accept: true}
}

// start reads the peer's nonce and, on an inbound connection, the known header, to choose
// the key: a peer under another key fails here at once.
func (c *protectedConn) start() error {
	c.setup.Do(func() {
		nonce := make([]byte, nonceSize)
		if _, err := io.ReadFull(c.Conn, nonce); err != nil {
			c.setupErr = fmt.Errorf("could not read the private network's nonce: %w", err)
			return
		}
		if !c.accept {
			c.key = &c.keys[0]
			c.read = salsa20.New(c.key, nonce)
			return
		}
		first := make([]byte, len(multistreamHeader))
		if _, err := io.ReadFull(c.Conn, first); err != nil {
			c.setupErr = fmt.Errorf("could not read the first bytes: %w", err)
			return
		}
		for i := range c.keys {
			s := salsa20.New(&c.keys[i], nonce)
			plain := make([]byte, len(first))
			s.XORKeyStream(plain, first)
			if bytes.Equal(plain, multistreamHeader) {
				c.key, c.read, c.pending = &c.keys[i], s, plain
				return
			}
		}
		c.setupErr = errWrongKey
	})
	return c.setupErr
}

func (c *protectedConn) Read(out []byte) (int, error) {
	if err := c.start(); err != nil {
		return 0, err
	}
	if len(c.pending) > 0 {
		n := copy(out, c.pending)
		c.pending = c.pending[n:]
		return n, nil
	}
	n, err := c.Conn.Read(out)
	if n > 0 {
		c.read.XORKeyStream(out[:n], out[:n])
	}
	return n, err
}

func (c *protectedConn) Write(in []byte) (int, error) {
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	if c.write == nil {
		// An accepting host knows its key only once the dialer's first bytes are in; a
		// dialer's key is known from the start (start reads nothing before it is needed).
		key := &c.keys[0]
		if c.accept {
			if err := c.start(); err != nil {
				return 0, err
			}
			key = c.key
		}
		nonce := make([]byte, nonceSize)
		if _, err := rand.Read(nonce); err != nil {
			return 0, err
		}
		if _, err := c.Conn.Write(nonce); err != nil {
			return 0, err
		}
		c.write = salsa20.New(key, nonce)
	}
	out := pool.Get(len(in))
	defer pool.Put(out)
	c.write.XORKeyStream(out, in)
	return c.Conn.Write(out)
}
