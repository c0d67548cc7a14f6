package tui

import "github.com/charmbracelet/bubbles/key"

// keyMap is every key binding, with its help text.
type keyMap struct {
	Cluster, Shards, Handoffs, Events, Actions key.Binding
	Next, Prev                                 key.Binding
	Up, Down, PageUp, PageDown, Top, Bottom    key.Binding
	Enter, Back                                key.Binding
	Refresh                                    key.Binding
	Shutdown, Drain, Undrain, Rebalance        key.Binding
	FilterType, FilterNode, FilterText         key.Binding
	Sort                                       key.Binding
	Help, Quit                                 key.Binding
	Yes, No                                    key.Binding
}

func newKeyMap() keyMap {
	b := func(help, desc string, keys ...string) key.Binding {
		return key.NewBinding(key.WithKeys(keys...), key.WithHelp(help, desc))
	}
	return keyMap{
		Cluster:    b("1", "cluster", "1"),
		Shards:     b("2", "shards", "2"),
		Handoffs:   b("3", "handoffs", "3"),
		Events:     b("4", "events", "4"),
		Actions:    b("5", "actions", "5"),
		Next:       b("tab", "next view", "tab"),
		Prev:       b("shift+tab", "previous view", "shift+tab"),
		Up:         b("↑/k", "up", "up", "k"),
		Down:       b("↓/j", "down", "down", "j"),
		PageUp:     b("pgup", "page up", "pgup"),
		PageDown:   b("pgdn", "page down", "pgdown"),
		Top:        b("g", "top", "home", "g"),
		Bottom:     b("G", "bottom", "end", "G"),
		Enter:      b("enter", "open region", "enter"),
		Back:       b("esc", "back", "esc"),
		Refresh:    b("r", "refresh", "r"),
		Shutdown:   b("s", "shut down member", "s"),
		Drain:      b("d", "drain", "d"),
		Undrain:    b("u", "undrain", "u"),
		Rebalance:  b("p", "pause/resume rebalance", "p"),
		FilterType: b("t", "filter type", "t"),
		FilterNode: b("n", "filter node", "n"),
		FilterText: b("/", "filter", "/"),
		Sort:       b("o", "sort", "o"),
		Help:       b("?", "more keys", "?"),
		Quit:       b("q", "quit", "q", "ctrl+c"),
		Yes:        b("y", "yes", "y", "Y"),
		No:         b("n", "no", "n", "N", "esc"),
	}
}
