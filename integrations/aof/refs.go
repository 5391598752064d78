package aof

import (
	"os"
	"path/filepath"
	"strings"

	wf "github.com/ampflow/ampflow/workflows/aof"
)

// missingRefs returns a warning for each of a completion report's
// summaryRef and handoffRef that names no file under dataDir: neither in
// the task's directory (tasks/<status>/<taskId>/<ref>, any status) nor
// at dataDir/<ref>. The document takes such a report all the same
// ("transition proceeds; warning logged").
func missingRefs(dataDir, taskID string, c *wf.CompletionReport) []string {
	var out []string
	for _, ref := range []struct{ field, path string }{{"summaryRef", c.SummaryRef}, {"handoffRef", c.HandoffRef}} {
		if ref.path == "" || refExists(dataDir, taskID, ref.path) {
			continue
		}
		out = append(out, "payload."+ref.field+": no file "+ref.path+" under aof.data_dir")
	}
	return out
}

func refExists(dataDir, taskID, ref string) bool {
	p := filepath.FromSlash(ref)
	if !filepath.IsLocal(p) {
		return false
	}
	candidates := []string{filepath.Join(dataDir, p)}
	for _, st := range wf.Statuses() {
		dir := strings.ReplaceAll(string(st), "_", "-")
		candidates = append(candidates, filepath.Join(dataDir, "tasks", dir, taskID, p))
	}
	for _, c := range candidates {
		if fi, err := os.Stat(c); err == nil && fi.Mode().IsRegular() {
			return true
		}
	}
	return false
}
