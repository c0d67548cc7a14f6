package tui

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/charmbracelet/x/exp/golden"
	"github.com/charmbracelet/x/exp/teatest"
)

// TestGolden runs the dashboard as a bubbletea program (teatest) against the scripted
// cluster at a fixed clock with the ASCII profile, opens each view with its key, quits, and
// compares the final screen with testdata/TestGolden/VIEW_WxH.golden. go test -update
// rewrites them.
func TestGolden(t *testing.T) {
	for _, size := range [][2]int{{80, 24}, {120, 40}} {
		for _, c := range []struct {
			name string
			keys []string
			wait string // on the screen once the view shows what it should
		}{
			{"cluster", nil, ""},
			{"shards", []string{"2"}, "C: the type's coordinator"},
			{"region", []string{"2", "down", "enter"}, "user-3 user-13"},
			{"handoffs", []string{"3"}, "held up by: regions"},
			{"events", []string{"4"}, "window 8/2000 of 8 seen"},
			{"actions", []string{"5"}, "identity: admin"},
			{"confirm", []string{"down", "s"}, "y/N"},
			{"cluster_sorted_filtered", []string{"o", "o", "/", "1", ".", "3", "enter"}, "sorted by status · filter: 1.3 (esc clears)"},
			{"shards_sorted_filtered", []string{"2", "o", "/", "b", "b", "b", "b", "enter"}, "sorted by shards · filter: bbbb"},
			{"help", []string{"2", "?"}, "previous view"},
		} {
			t.Run(fmt.Sprintf("%s_%dx%d", c.name, size[0], size[1]), func(t *testing.T) {
				f := newFake()
				m := newModel(t, testConfig(func(context.Context) (Source, error) { return f, nil }))
				tm := teatest.NewTestModel(t, m, teatest.WithInitialTermSize(size[0], size[1]))
				// Every answer and event is in before the keys are typed.
				teatest.WaitFor(t, tm.Output(), func(b []byte) bool {
					return bytes.Contains(b, []byte("handoffs in flight 1")) && bytes.Contains(b, []byte("converged"))
				}, teatest.WithDuration(10*time.Second), teatest.WithCheckInterval(10*time.Millisecond))
				for _, k := range c.keys {
					tm.Send(keyMsg(k))
				}
				if c.wait != "" {
					teatest.WaitFor(t, tm.Output(), func(b []byte) bool { return bytes.Contains(b, []byte(c.wait)) },
						teatest.WithDuration(10*time.Second), teatest.WithCheckInterval(10*time.Millisecond))
				}
				tm.Send(keyMsg("ctrl+c")) // q would answer the confirmation prompt
				fm := tm.FinalModel(t, teatest.WithFinalTimeout(10*time.Second)).(Model)
				// The admin check and the rebalance status answer concurrently with the
				// rest: wait for them in the model too (the screen may not show them).
				if !fm.admin.known || !fm.rebalance.known {
					t.Fatalf("quit before every answer: admin %+v rebalance %+v", fm.admin, fm.rebalance)
				}
				golden.RequireEqual(t, []byte(fm.View()))
			})
		}
	}
}

// TestGoldenQuitRestoresTerminal: q ends the program (teatest's Run returns), leaving the
// alternate screen and showing the cursor again in the last bytes written.
func TestGoldenQuitRestoresTerminal(t *testing.T) {
	f := newFake()
	m := newModel(t, testConfig(func(context.Context) (Source, error) { return f, nil }))
	tm := teatest.NewTestModel(t, m, teatest.WithInitialTermSize(80, 24))
	teatest.WaitFor(t, tm.Output(), func(b []byte) bool { return bytes.Contains(b, []byte("converged")) }, teatest.WithDuration(10*time.Second))
	tm.Send(keyMsg("q"))
	tm.WaitFinished(t, teatest.WithFinalTimeout(10*time.Second))
	var out bytes.Buffer
	_, _ = out.ReadFrom(tm.FinalOutput(t))
	if !bytes.Contains(out.Bytes(), []byte("\x1b[?25h")) {
		t.Errorf("the cursor is not shown again after quitting: %q", out.String())
	}
}
