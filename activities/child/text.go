package child

import "strings"

// OneLine joins a multi-line text into one line.
func OneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// Clip cuts s to n bytes, keeping its lines.
func Clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
