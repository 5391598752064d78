package child

import (
	"slices"
	"strings"
	"testing"
)

func TestChildEnv(t *testing.T) {
	parent := map[string]string{
		"PATH": "/bin", "HOME": "/home/a", "LANG": "C.UTF-8",
		"AMPFLOW_TEMPORAL_API_KEY": "k", "OPENAI_API_KEY": "sk", "GITHUB_TOKEN": "ghp",
		"AMPFLOW_AUTH_DECISION_KEY": "dk", "AMPFLOW_API_TOKEN": "at",
	}
	lookup := func(k string) (string, bool) { v, ok := parent[k]; return v, ok }
	// The worker's own settings never pass, even when allowed by name.
	got := Env(lookup, []string{"OPENAI_API_KEY", "MODE=fast", "UNSET", "AMPFLOW_TEMPORAL_API_KEY", "AMPFLOW_AUTH_DECISION_KEY", "AMPFLOW_API_TOKEN"}, "AMP_ROLE=executor")
	want := []string{"PATH=/bin", "HOME=/home/a", "LANG=C.UTF-8", "OPENAI_API_KEY=sk", "MODE=fast", "AMP_ROLE=executor"}
	if !slices.Equal(got, want) {
		t.Errorf("Env = %q, want %q", got, want)
	}
}

func TestScrubber(t *testing.T) {
	s := NewScrubber([]string{"abc", "", "abcdef-secret", "zz-token"})
	text := "x abcdef-secret y abc zz-token zz-tok abcdef-secre"
	want := "x [redacted] y [redacted] [redacted] zz-tok [redacted]def-secre"
	if got := s.Scrub(text); got != want {
		t.Fatalf("Scrub = %q, want %q", got, want)
	}
	// Written in pieces of every size, a secret split across writes is
	// still masked.
	for size := 1; size <= len(text); size++ {
		var b strings.Builder
		w := s.Writer(&b)
		for i := 0; i < len(text); i += size {
			if _, err := w.Write([]byte(text[i:min(i+size, len(text))])); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		if b.String() != want {
			t.Errorf("pieces of %d: %q, want %q", size, b.String(), want)
		}
	}
	var nilScrubber *Scrubber
	if got := nilScrubber.Scrub("abc"); got != "abc" {
		t.Errorf("nil Scrub = %q", got)
	}
}
