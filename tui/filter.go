package tui

import (
	"strings"

	tea "github.com/charmbracelet/bubbletea"
)

// textFilter is a view's text filter: typed after "/", kept on enter, cleared with esc.
type textFilter struct {
	text    string // "" no filter
	editing bool   // the operator is typing it
}

// maxFilterText bounds what may be typed.
const maxFilterText = 64

// edit types into the filter.
func (f *textFilter) edit(msg tea.KeyMsg) {
	switch msg.Type {
	case tea.KeyEnter, tea.KeyEsc:
		f.editing = false
	case tea.KeyBackspace:
		if r := []rune(f.text); len(r) > 0 {
			f.text = string(r[:len(r)-1])
		}
	case tea.KeyRunes, tea.KeySpace:
		if len(f.text) < maxFilterText {
			f.text += string(msg.Runes)
		}
	}
}

// match reports whether any of fields contains the filter text, ignoring case (every
// field matches an empty filter).
func (f *textFilter) match(fields ...string) bool {
	if f.text == "" {
		return true
	}
	t := strings.ToLower(f.text)
	for _, s := range fields {
		if strings.Contains(strings.ToLower(s), t) {
			return true
		}
	}
	return false
}

// filterLine is the line above a sortable, filterable table: its order and its filter.
func filterLine(order, text string, editing bool) string {
	s := "sorted by " + order
	switch {
	case editing:
		s += " · filter: " + text + "▏"
	case text != "":
		s += " · filter: " + text + " (esc clears)"
	}
	return s
}
