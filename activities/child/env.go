// Package child is how ampflow starts processes for code it does not
// control (git, CI commands, agents): the environment they get, the
// secrets masked in what they print, and the tail of their output kept.
package child

import (
	"bytes"
	"io"
	"os"
	"slices"
	"sort"
	"strings"

	"github.com/ampflow/ampflow/config"
)

// baseEnv names the worker's variables every child process gets.
var baseEnv = []string{"PATH", "HOME", "LANG", "TMPDIR"}

// Env is the environment of a process ampflow runs for code it does
// not control (CI commands, command-mode agents, runners): none of the
// worker's variables but the base set and those allow names; an allow
// entry NAME=value sets NAME outright. set (KEY=value, ampflow's own
// variables) comes last and wins. The worker's own settings (AMPFLOW_*:
// its API tokens, decision key, Temporal key) never pass, even when allow
// names them: code ampflow runs must not reach ampflow as ampflow.
func Env(lookup func(string) (string, bool), allow []string, set ...string) []string {
	if lookup == nil {
		lookup = os.LookupEnv
	}
	var env []string
	for _, name := range append(append([]string(nil), baseEnv...), allow...) {
		if strings.Contains(name, "=") {
			env = append(env, name)
			continue
		}
		if strings.HasPrefix(name, config.EnvPrefix) {
			continue
		}
		if v, ok := lookup(name); ok {
			env = append(env, name+"="+v)
		}
	}
	return append(env, set...)
}

// Scrubber masks secrets in text that leaves ampflow: CI output, an
// agent's stderr. The zero value and nil mask nothing.
type Scrubber struct {
	secrets [][]byte // longest first
	r       *strings.Replacer
}

// ScrubMask replaces a secret in scrubbed text.
const ScrubMask = "[redacted]"

// NewScrubber masks each non-empty secret; of secrets starting at the
// same place the longest is masked.
func NewScrubber(secrets []string) *Scrubber {
	var pairs []string
	s := &Scrubber{}
	for _, sec := range longestFirst(secrets) {
		pairs = append(pairs, sec, ScrubMask)
		s.secrets = append(s.secrets, []byte(sec))
	}
	if len(pairs) > 0 {
		s.r = strings.NewReplacer(pairs...)
	}
	return s
}

func longestFirst(secrets []string) []string {
	out := make([]string, 0, len(secrets))
	for _, s := range secrets {
		if s != "" && !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return len(out[i]) > len(out[j]) })
	return out
}

// Scrub returns s with every secret masked.
func (s *Scrubber) Scrub(text string) string {
	if s == nil || s.r == nil {
		return text
	}
	return s.r.Replace(text)
}

// Writer returns a writer that masks secrets in what passes through it to
// w, even a secret split across writes; Close writes what it holds back.
func (s *Scrubber) Writer(w io.Writer) io.WriteCloser {
	return &scrubWriter{s: s, w: w}
}

type scrubWriter struct {
	s   *Scrubber
	w   io.Writer
	buf []byte
}

// Write masks and passes on every secret that starts early enough to be
// whole in what it holds, and holds back the rest: a secret there may
// not have been written in full yet.
func (sw *scrubWriter) Write(p []byte) (int, error) {
	if sw.s == nil || sw.s.r == nil {
		return sw.w.Write(p)
	}
	sw.buf = append(sw.buf, p...)
	cut := len(sw.buf) - (len(sw.s.secrets[0]) - 1)
	var out []byte
	i, from := 0, 0
	for i < cut {
		n := sw.s.matchAt(sw.buf[i:])
		if n == 0 {
			i++
			continue
		}
		out = append(append(out, sw.buf[from:i]...), ScrubMask...)
		i += n
		from = i
	}
	out = append(out, sw.buf[from:i]...)
	if _, err := sw.w.Write(out); err != nil {
		return 0, err
	}
	sw.buf = append(sw.buf[:0], sw.buf[i:]...)
	return len(p), nil
}

// matchAt returns the length of the longest secret b starts with, or 0.
func (s *Scrubber) matchAt(b []byte) int {
	for _, sec := range s.secrets {
		if len(b) >= len(sec) && b[0] == sec[0] && bytes.Equal(b[:len(sec)], sec) {
			return len(sec)
		}
	}
	return 0
}

func (sw *scrubWriter) Close() error {
	if len(sw.buf) == 0 {
		return nil
	}
	_, err := sw.w.Write([]byte(sw.s.Scrub(string(sw.buf))))
	sw.buf = nil
	return err
}
