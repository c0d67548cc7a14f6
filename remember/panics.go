package remember

import (
	"errors"
	"fmt"
	"runtime/debug"
)

// ErrBroken says a goroutine of the store panicked (a bug, or the database failing under it);
// it answers nothing reliably from then on, and its owner should stop (Config.Broken).
var ErrBroken = errors.New("store broken")

// caught turns a panic in one of the store's goroutines into the store breaking: it logs
// the panic with its stack once and tells Config.Broken, rather than letting the process
// die with the runtime's exit code 2. Call it deferred, at the top of the goroutine.
func (s *Store) caught(where string) {
	r := recover()
	if r == nil {
		return
	}
	s.broke(fmt.Errorf("remember: %w: %s panicked: %s", ErrBroken, where, oneLine(fmt.Sprint(r))), debug.Stack())
}

// broke records that the store broke and tells its owner, once.
func (s *Store) broke(err error, stack []byte) {
	if !s.broken.CompareAndSwap(nil, &err) {
		return
	}
	s.log.Error("the store broke: the member must stop", "dir", s.cfg.Dir, "err", err, "stack", string(stack))
	if s.cfg.Broken != nil {
		go s.cfg.Broken(err)
	}
}
