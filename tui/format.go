package tui

import (
	"fmt"
	"strings"
	"time"

	"github.com/charmbracelet/x/ansi"
)

// shortID shortens a peer id as shardctl's tables do: its last 8 characters.
func shortID(id string) string {
	if len(id) <= 10 {
		return id
	}
	return "…" + id[len(id)-8:]
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// clip cuts s to n cells, marking the cut.
func clip(s string, n int) string {
	if ansi.StringWidth(s) <= n {
		return s
	}
	return ansi.Truncate(s, n, "…")
}

// fmtDuration is a compact duration: 850ms, 12s, 4m05s, 3h12m, 2d04h.
func fmtDuration(d time.Duration) string {
	switch {
	case d < 0:
		return "0s"
	case d < time.Second:
		return fmt.Sprintf("%dms", d.Milliseconds())
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
	}
	return fmt.Sprintf("%dd%02dh", int(d.Hours())/24, int(d.Hours())%24)
}

func fmtRate(r float64) string {
	if r >= 100 {
		return fmt.Sprintf("%.0f", r)
	}
	return fmt.Sprintf("%.1f", r)
}

// fit cuts every line to width cells and pads the block to height lines.
func fit(lines []string, width, height int) string {
	if len(lines) > height {
		lines = lines[:height]
	}
	var b strings.Builder
	for i, l := range lines {
		if i > 0 {
			b.WriteByte('\n')
		}
		if ansi.StringWidth(l) > width {
			l = ansi.Truncate(l, width, "…")
		}
		b.WriteString(l)
	}
	for i := len(lines); i < height; i++ {
		b.WriteByte('\n')
	}
	return b.String()
}

// plural is "1 member", "3 members".
func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// pad pads s with spaces to n cells (fmt's %-Ns counts bytes, and ids start with "…").
func pad(s string, n int) string {
	if w := ansi.StringWidth(s); w < n {
		return s + strings.Repeat(" ", n-w)
	}
	return s
}
