package repomesh

import (
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/ampflow/ampflow/amp"
)

// nonNegative are the registry's counts.
var nonNegative = []string{"passed", "failed", "skipped", "total", "duration_ms", "test_count", "file_count",
	"findings_count", "warnings", "errors", "lease_ttl", "priority"}

// checkValues checks what the registry says of a payload's values beyond
// their kinds, once the kinds are right: counts are not negative, a
// finding's severity is one of the envelope's and its line_number at
// least 1, progress_percent is from 0 to 100, and each of a test.result's
// failures is an object naming its test.
func checkValues(typ string, p map[string]any) []amp.FieldError {
	var errs []amp.FieldError
	bad := func(field, format string, args ...any) {
		errs = append(errs, amp.FieldError{Path: "payload." + field, Problem: fmt.Sprintf(format, args...)})
	}
	for _, k := range nonNegative {
		if f, ok := p[k].(float64); ok && f < 0 {
			bad(k, "must not be negative")
		}
	}
	switch typ {
	case "review.finding":
		if s, _ := p["severity"].(string); !slices.Contains(severities, s) {
			bad("severity", "must be info, warning or error")
		}
		if f, _ := p["line_number"].(float64); f < 1 {
			bad("line_number", "must be at least 1")
		}
	case "task.progress":
		if f, _ := p["progress_percent"].(float64); f < 0 || f > 100 {
			bad("progress_percent", "must be from 0 to 100")
		}
	case "test.result":
		fs, _ := p["failures"].([]any)
		for i, f := range fs {
			path := fmt.Sprintf("failures[%d]", i)
			m, ok := f.(map[string]any)
			if !ok {
				bad(path, "must be an object with test, error and message")
				continue
			}
			if s, ok := m["test"].(string); !ok || s == "" {
				bad(path+".test", "is required (string)")
			} else if len(s) > MaxName {
				bad(path+".test", "is longer than %d bytes", MaxName)
			}
			for _, k := range []string{"error", "message"} {
				if v, ok := m[k]; ok && v != nil {
					if s, ok := v.(string); !ok {
						bad(path+"."+k, "must be a string")
					} else if len(s) > MaxContent {
						bad(path+"."+k, "is longer than %d bytes", MaxContent)
					}
				}
			}
		}
	}
	return errs
}

func kindProblem(kind string, v any) string {
	switch kind {
	case kString:
		if _, ok := v.(string); !ok {
			return "must be a string"
		}
	case kInt:
		f, ok := v.(float64)
		if !ok || f != float64(int64(f)) {
			return "must be an integer"
		}
	case kNumber:
		if _, ok := v.(float64); !ok {
			return "must be a number"
		}
	case kArray:
		if _, ok := v.([]any); !ok {
			return "must be an array"
		}
	case kObject:
		if _, ok := v.(map[string]any); !ok {
			return "must be an object"
		}
	case kTime:
		s, ok := v.(string)
		if !ok {
			return "must be an ISO-8601 timestamp"
		}
		if _, err := time.Parse(time.RFC3339Nano, s); err != nil {
			return "must be an ISO-8601 timestamp (RFC 3339), such as 2026-02-22T23:20:00Z"
		}
	}
	return ""
}

func hasField(errs []amp.FieldError, f string) bool {
	return slices.ContainsFunc(errs, func(e amp.FieldError) bool { return e.Path == f })
}

func firstOf(ss ...string) string {
	for _, s := range ss {
		if s != "" {
			return s
		}
	}
	return ""
}

func firstLine(s string) string { l, _, _ := strings.Cut(s, "\n"); return l }

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
