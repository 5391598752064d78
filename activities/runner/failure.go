package runner

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
)

var (
	authRE = regexp.MustCompile(`(?i)\b401\b|unauthori[sz]ed|authentication[_ ](error|failed)|invalid[ _-]?(x-)?api[ _-]?key|` +
		`incorrect api key|api key not valid|please run /login|not logged in|missing (an )?api key|no api key|` +
		`api_key_invalid|permission[_ ]denied.*key|missing (the )?environment variable|` +
		`must specify the \w+ environment variable|\b\w*(api_key|_token)\b.{0,20}\b(is )?(not set|unset|missing)`)
	rateRE = regexp.MustCompile(`(?i)rate[ _-]?limit|usage limit|limit reached|\b429\b|too many requests|` +
		`resource[ _]exhausted|quota|overloaded|\b529\b`)

	// netRE finds a model API connection that dropped mid-answer, as the
	// CLIs and their fetch (undici) report it.
	netRE = regexp.MustCompile(`(?i)"message":\s*"terminated"|\bTypeError: terminated\b|API Error: terminated|\bfetch failed\b|` +
		`\bECONNRESET\b|socket hang up|other side closed|stream disconnected before completion`)

	epochRE   = regexp.MustCompile(`(?i)(?:reset|retry|again)[^0-9]{0,24}(\d{10})\b|limit reached\|(\d{10})\b`)
	rfc3339RE = regexp.MustCompile(`\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(?::\d{2})?(?:\.\d+)?(?:Z|[+-]\d{2}:?\d{2})`)
	inRE      = regexp.MustCompile(`(?i)(?:try again|retry|resets?|available again)\s+(?:in|after)\s+((?:\d+\s*(?:days?|d|hours?|hrs?|h|minutes?|mins?|m|seconds?|secs?|s)\b[\s,]*(?:and\s+)?)+)`)
	durPartRE = regexp.MustCompile(`(?i)(\d+)\s*(days?|d|hours?|hrs?|h|minutes?|mins?|m|seconds?|secs?|s)\b`)
	clockRE   = regexp.MustCompile(`(?i)(?:try again|resets?|available again)\s+at\s+(\d{1,2}):(\d{2})\s*([ap]\.?m\.?)?`)
	// Codex names a reset on another day by date: "Try again at Dec 2nd,
	// 2026 12:17 AM".
	dateRE      = regexp.MustCompile(`(?i)(?:try again|resets?|available again)\s+at\s+([a-z]{3})[a-z]*\.?\s+(\d{1,2})(?:st|nd|rd|th)?,?\s+(\d{4}),?\s+(\d{1,2}):(\d{2})\s*([ap]\.?m\.?)?`)
	stderrNoise = regexp.MustCompile(`(?i)^\s*(warning|warn)\b`)
)

// classify tells why a run that did not succeed failed, from the errors its
// stream reported (latest last), its stderr and how it ended. It returns nil
// for a run a watchdog stopped with nothing more specific to say.
func classify(o Outcome, errs []string) *Failure {
	lines := append([]string(nil), errs...)
	for _, l := range strings.Split(o.Stderr, "\n") {
		if l = strings.TrimSpace(l); l != "" && !stderrNoise.MatchString(l) {
			lines = append(lines, l)
		}
	}
	for i := len(lines) - 1; i >= 0; i-- {
		l := lines[i]
		switch {
		case authRE.MatchString(l):
			return &Failure{Class: FailureAuth, Message: clip(l)}
		case rateRE.MatchString(l):
			return &Failure{Class: FailureRateLimit, Message: clip(l), ResetAt: resetAt(l, o.Ended)}
		case netRE.MatchString(l):
			return &Failure{Class: FailureNetwork, Message: clip(l)}
		}
	}
	if o.Reason != ReasonExited {
		return nil
	}
	// The exit and the last lines the run left: the stream's errors, then
	// its stderr, latest last.
	msg := fmt.Sprintf("exit status %d", o.ExitCode)
	if !o.Result {
		msg += " without a final result"
	}
	if len(lines) > 0 {
		msg += ": " + strings.Join(lines[max(0, len(lines)-crashLines):], " | ")
	}
	return &Failure{Class: FailureCrash, Message: clip(msg)}
}

// crashLines is how many of a crashed run's last lines its failure quotes.
const crashLines = 3

func clip(s string) string {
	const n = 500
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// resetAt reads when a rate limit lifts from a CLI's message: a Unix time,
// an RFC 3339 time, "try again in 2 hours 5 minutes", "try again at Dec 2nd,
// 2026 12:17 AM" (in now's zone), or "try again at 3:04 PM" (the next such
// time after now, in now's zone). Zero when it says none.
func resetAt(msg string, now time.Time) time.Time {
	if now.IsZero() {
		now = time.Now()
	}
	if m := epochRE.FindStringSubmatch(msg); m != nil {
		s := m[1] + m[2]
		if n, err := strconv.ParseInt(s, 10, 64); err == nil {
			return time.Unix(n, 0)
		}
	}
	if m := rfc3339RE.FindString(msg); m != "" {
		for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04Z07:00", "2006-01-02T15:04:05Z0700"} {
			if t, err := time.Parse(layout, m); err == nil {
				return t
			}
		}
	}
	if m := inRE.FindStringSubmatch(msg); m != nil {
		var d time.Duration
		for _, p := range durPartRE.FindAllStringSubmatch(m[1], -1) {
			n, _ := strconv.Atoi(p[1])
			switch u := strings.ToLower(p[2]); {
			case strings.HasPrefix(u, "d"):
				d += time.Duration(n) * 24 * time.Hour
			case strings.HasPrefix(u, "h"):
				d += time.Duration(n) * time.Hour
			case strings.HasPrefix(u, "m"):
				d += time.Duration(n) * time.Minute
			default:
				d += time.Duration(n) * time.Second
			}
		}
		if d > 0 {
			return now.Add(d)
		}
	}
	if m := dateRE.FindStringSubmatch(msg); m != nil {
		if mon, err := time.Parse("Jan", strings.ToUpper(m[1][:1])+strings.ToLower(m[1][1:])); err == nil {
			d, _ := strconv.Atoi(m[2])
			y, _ := strconv.Atoi(m[3])
			return time.Date(y, mon.Month(), d, hour(m[4], m[6]), minute(m[5]), 0, 0, now.Location())
		}
	}
	if m := clockRE.FindStringSubmatch(msg); m != nil {
		t := time.Date(now.Year(), now.Month(), now.Day(), hour(m[1], m[3]), minute(m[2]), 0, 0, now.Location())
		switch {
		case t.After(now):
		case now.Sub(t) < time.Minute:
			// The clock drops the seconds: a reset within this minute
			// is at most its end.
			t = t.Add(time.Minute)
		default:
			t = t.Add(24 * time.Hour)
		}
		return t
	}
	return time.Time{}
}

// hour is a clock's hour h on 24 hours, given "am", "pm" (or "p.m.") or
// nothing.
func hour(h, ampm string) int {
	n, _ := strconv.Atoi(h)
	switch ampm = strings.ToLower(strings.ReplaceAll(ampm, ".", "")); {
	case ampm == "pm" && n < 12:
		n += 12
	case ampm == "am" && n == 12:
		n = 0
	}
	return n
}

func minute(m string) int {
	n, _ := strconv.Atoi(m)
	return n
}
