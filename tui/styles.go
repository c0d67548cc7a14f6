package tui

import (
	"github.com/charmbracelet/lipgloss"
)

// styles are the dashboard's looks. Every style is also readable without colour (NO_COLOR):
// selection has a ">" marker, states are words.
type styles struct {
	title, tab, activeTab, header, selected, dim, bad, warn, good, bar, barEmpty, status, prompt lipgloss.Style
}

func newStyles(r *lipgloss.Renderer) styles {
	return styles{
		title:     r.NewStyle().Bold(true),
		tab:       r.NewStyle().Foreground(lipgloss.AdaptiveColor{Light: "242", Dark: "246"}),
		activeTab: r.NewStyle().Bold(true).Underline(true),
		header:    r.NewStyle().Bold(true),
		selected:  r.NewStyle().Reverse(true),
		dim:       r.NewStyle().Foreground(lipgloss.AdaptiveColor{Light: "245", Dark: "242"}),
		bad:       r.NewStyle().Foreground(lipgloss.Color("9")).Bold(true),
		warn:      r.NewStyle().Foreground(lipgloss.Color("11")),
		good:      r.NewStyle().Foreground(lipgloss.Color("10")),
		bar:       r.NewStyle().Foreground(lipgloss.Color("12")),
		barEmpty:  r.NewStyle().Foreground(lipgloss.AdaptiveColor{Light: "252", Dark: "238"}),
		status:    r.NewStyle().Italic(true),
		prompt:    r.NewStyle().Bold(true).Foreground(lipgloss.Color("11")),
	}
}
