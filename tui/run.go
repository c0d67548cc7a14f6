package tui

import (
	"context"
	"io"
	"os"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"github.com/muesli/termenv"
)

// Run shows the dashboard on the terminal (in the alternate screen) until the operator
// quits (q, ctrl+c) or ctx ends, and restores the terminal. With NO_COLOR set it uses no
// colour.
func Run(ctx context.Context, cfg Config, in io.Reader, out io.Writer) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if cfg.Renderer == nil {
		cfg.Renderer = lipgloss.NewRenderer(out)
		if os.Getenv("NO_COLOR") != "" {
			cfg.Renderer.SetColorProfile(termenv.Ascii)
		}
	}
	m, err := New(ctx, cfg)
	if err != nil {
		return err
	}
	p := tea.NewProgram(m, tea.WithContext(ctx), tea.WithInput(in), tea.WithOutput(out), tea.WithAltScreen())
	final, err := p.Run()
	if fm, ok := final.(Model); ok && fm.src != nil {
		_ = fm.src.Close()
	}
	if err == tea.ErrProgramKilled && ctx.Err() != nil {
		return nil // ended from outside
	}
	return err
}
