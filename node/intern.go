package node

import "sync"

// interned keeps one copy of the strings that frames repeat on every message — shard ids,
// member ids — so that decoding a frame finds them without allocating. It is bounded: once
// full (a peer sending ids by the million, say), new strings are still returned, just not
// kept. Safe from any goroutine.
type interned struct {
	mu sync.RWMutex
	m  map[string]string
}

// maxInterned bounds an interned table.
const maxInterned = 1 << 16

// of returns b as a string, the kept copy when there is one. A nil table keeps nothing.
func (t *interned) of(b []byte) string {
	if t == nil {
		return string(b)
	}
	t.mu.RLock()
	s, ok := t.m[string(b)] // no allocation for the lookup
	t.mu.RUnlock()
	if ok {
		return s
	}
	s = string(b)
	t.mu.Lock()
	if t.m == nil {
		t.m = map[string]string{}
	}
	if len(t.m) < maxInterned {
		t.m[s] = s
	}
	t.mu.Unlock()
	return s
}
