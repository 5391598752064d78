package runner

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"time"

	acp "github.com/coder/acp-go-sdk"
)

// Gemini CLI 0.61 names a session's chat file by the minute (UTC) the
// session began, as session-2026-05-01T09-41-<first 8 of its id>.jsonl,
// and a process that loads the session begins a recording of its own in
// a file named by the current minute. In the session's own minute that
// is the session's file, which the agent then takes for the session it
// is recording and skips: "No previous sessions found for this project".
// So before it loads one of Gemini CLI's sessions, the run waits for the
// session's minute to pass.

// geminiAgent is the agentInfo name Gemini CLI gives in initialize.
const geminiAgent = "gemini-cli"

// geminiChatLayout is the timestamp of a chat file's name.
const geminiChatLayout = "2006-01-02T15-04"

// geminiSessionMinute is the minute session began, read from its chat
// file's name under home's .gemini/tmp; false when there is none.
func geminiSessionMinute(home, session string) (time.Time, bool) {
	if home == "" || len(session) < 8 {
		return time.Time{}, false
	}
	short := session[:8]
	files, _ := filepath.Glob(filepath.Join(home, ".gemini", "tmp", "*", "chats", "session-*-"+short+".json*"))
	var latest time.Time
	for _, f := range files {
		name := strings.TrimPrefix(filepath.Base(f), "session-")
		if len(name) < len(geminiChatLayout) {
			continue
		}
		if m, err := time.ParseInLocation(geminiChatLayout, name[:len(geminiChatLayout)], time.UTC); err == nil && m.After(latest) {
			latest = m
		}
	}
	return latest, !latest.IsZero()
}

// awaitSessionMinute waits, for Gemini CLI, until the minute its session
// began has passed (or ctx ends).
func awaitSessionMinute(ctx context.Context, info *acp.Implementation, env []string, session string) {
	if info == nil || info.Name != geminiAgent {
		return
	}
	home := envValue(env, "HOME")
	if home == "" {
		home, _ = os.UserHomeDir()
	}
	began, ok := geminiSessionMinute(home, session)
	if !ok {
		return
	}
	// A little past the minute: the agent reads the same clock, later.
	wait := time.Until(began.Add(time.Minute + 500*time.Millisecond))
	if wait <= 0 {
		return
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// envValue is name's last value in env.
func envValue(env []string, name string) string {
	for i := len(env) - 1; i >= 0; i-- {
		if n, v, ok := strings.Cut(env[i], "="); ok && n == name {
			return v
		}
	}
	return ""
}
