package activities

import (
	"fmt"
	"strings"

	"github.com/ampflow/ampflow/activities/child"
	"github.com/ampflow/ampflow/activities/github"
)

// Bounds of what a GitHub CI failure sends the executor.
const (
	ciLogTail   = 4 << 10  // of each failed job's log
	ciDetailMax = 12 << 10 // of the whole detail
	ciTextMax   = 2 << 10  // of a check's summary or text
)

// failureDetail writes failed checks for the executor: each check's
// title and summary, its annotations as file:line, the failing step and
// the tail of its log; at most max bytes, whole checks first.
func failureDetail(fails []github.FailedCheck, max int) string {
	var b strings.Builder
	for i, f := range fails {
		var c strings.Builder
		fmt.Fprintf(&c, "## %s: %s", f.Name, f.Conclusion)
		if f.URL != "" {
			c.WriteString(" (" + f.URL + ")")
		}
		c.WriteString("\n")
		if f.Title != "" {
			c.WriteString(child.Clip(f.Title, 200) + "\n")
		}
		if f.Summary != "" {
			c.WriteString(child.Clip(f.Summary, ciTextMax) + "\n")
		}
		if f.Text != "" {
			c.WriteString(child.Clip(f.Text, ciTextMax) + "\n")
		}
		for _, a := range f.Annotations {
			fmt.Fprintf(&c, "- [%s] %s:%d %s\n", a.Level, a.Path, a.Line, child.Clip(child.OneLine(a.Message), 300))
		}
		if f.FailedStep != "" {
			c.WriteString("Failing step: " + f.FailedStep + "\n")
		}
		if f.LogTail != "" {
			c.WriteString("Log tail:\n" + f.LogTail + "\n")
		}
		if b.Len()+c.Len() > max {
			if b.Len() == 0 {
				b.WriteString(child.Clip(c.String(), max) + "\n")
				i++
			}
			if rest := len(fails) - i; rest > 0 {
				fmt.Fprintf(&b, "(%d more failed checks left out)", rest)
			}
			break
		}
		b.WriteString(c.String())
	}
	return strings.TrimRight(b.String(), "\n")
}
