package runner

import (
	"encoding/json"
	"regexp"
	"slices"
	"strings"
	"sync"
)

// tail keeps the last n bytes written to it.
type tail struct {
	mu  sync.Mutex
	n   int
	buf []byte
	cut bool
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - t.n; over > 0 {
		t.buf = slices.Delete(t.buf, 0, over)
		t.cut = true
	}
	return len(p), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}

// plainEnv names variables whose values are not secrets, so masking them
// would only make a stderr tail unreadable.
var plainEnv = map[string]bool{
	"PATH": true, "HOME": true, "PWD": true, "SHELL": true, "TERM": true, "USER": true, "LOGNAME": true,
	"LANG": true, "TMPDIR": true, "TZ": true, "IS_SANDBOX": true, "CODEX_HOME": true, "NODE_OPTIONS": true,
	"GIT_AUTHOR_NAME": true, "GIT_AUTHOR_EMAIL": true, "GIT_COMMITTER_NAME": true, "GIT_COMMITTER_EMAIL": true,
}

var secretName = regexp.MustCompile(`(?i)(KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|AUTH|COOKIE|SESSION)`)

// secretsOf lists the env values to mask: every value of a secret-looking
// name, and every other value of 6 bytes or more except the plain ones
// (short values such as "1" or "x" would mask half the text).
func secretsOf(env []string) []string {
	var out []string
	for _, kv := range env {
		name, value, ok := strings.Cut(kv, "=")
		if !ok || value == "" {
			continue
		}
		if plainEnv[name] || strings.HasPrefix(name, "LC_") || strings.HasPrefix(name, "XDG_") {
			continue
		}
		if secretName.MatchString(name) || len(value) >= 6 {
			out = append(out, value)
		}
	}
	// Longest first, so a secret that contains another is masked whole.
	slices.SortFunc(out, func(a, b string) int { return len(b) - len(a) })
	return slices.Compact(out)
}

// mask replaces each secret in s with "***".
func mask(s string, secrets []string) string {
	for _, v := range secrets {
		s = strings.ReplaceAll(s, v, "***")
	}
	return s
}

// maskEvent masks secrets in what an event passes on to be recorded: its
// text and its tool input. A secret is text without quotes or
// backslashes, so the masked input is still JSON.
func maskEvent(ev Event, secrets []string) Event {
	ev.Text = mask(ev.Text, secrets)
	if len(ev.Input) > 0 {
		ev.Input = json.RawMessage(mask(string(ev.Input), secrets))
	}
	return ev
}

// SecretName says whether an environment variable's name looks like it
// holds a secret (an API key, a token, a password).
func SecretName(name string) bool { return secretName.MatchString(name) }
