package remember

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"time"
)

// The refill's state across restarts (machine_refill.go decides it): a marker file,
// Config.RefillMarker, written by `shardctl data rebuild`, by store.rebuild-damaged, and
// when the machine finds far fewer keys than a peer; removed when the refill is done.

// Refill returns the state of the replica's refill, as of the store's last turn.
func (s *Store) Refill() RefillState {
	s.statsMu.Lock()
	defer s.statsMu.Unlock()
	return s.refill
}

// startRefill starts a refill left unfinished, or asked for, by the marker (Open).
func (s *Store) startRefill() error {
	if s.cfg.RefillMarker == "" {
		return nil
	}
	b, err := os.ReadFile(s.cfg.RefillMarker)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return fmt.Errorf("remember: read the refill marker: %w", err)
	}
	reason := string(b)
	if reason == "" {
		reason = "asked for (" + s.cfg.RefillMarker + ")"
	}
	s.m.StartRefill(time.Now(), reason)
	s.refill = s.m.Refill()
	return nil
}

// refillChanged keeps the marker with the machine's refill: written when one starts, removed
// when it is done.
func (s *Store) refillChanged(st RefillState) {
	if st.Active {
		s.log.Warn("this replica holds far fewer keys than a peer (a store lost, replaced or damaged?): it refills from its peers before its answers count in reads",
			"dir", s.cfg.Dir, "why", st.Reason)
		if s.cfg.RefillMarker != "" {
			if err := os.WriteFile(s.cfg.RefillMarker, []byte(st.Reason), 0o600); err != nil {
				s.log.Error("cannot keep the refill across a restart", "err", fmt.Errorf("remember: write the refill marker: %w", err))
			}
		}
		return
	}
	if s.cfg.RefillMarker != "" {
		if err := os.Remove(s.cfg.RefillMarker); err != nil && !errors.Is(err, fs.ErrNotExist) {
			s.log.Error("cannot remove the refill marker", "err", err)
		}
	}
	s.log.Info("refilled from the peers: this replica counts in reads again", "dir", s.cfg.Dir, "since", st.Since.Format(time.RFC3339))
}
