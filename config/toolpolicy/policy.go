// Package toolpolicy decides an agent CLI's tool call before it runs:
// rules matched in order over the tool's name, its common kind, its input
// as canonical JSON and the paths it touches; the first match's action
// applies (allow, deny, or ask an admin), else the default. It is pure:
// no I/O, no clock, nothing of ampflow's systems.
package toolpolicy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
)

// Action is what a rule does with a tool call.
type Action string

// Actions.
const (
	Allow Action = "allow"
	Deny  Action = "deny"
	// Ask puts the call to the task's admins as a tool_call decision.
	Ask Action = "ask"
)

// Actions lists every action.
func Actions() []Action { return []Action{Allow, Deny, Ask} }

// Risks a rule may name; they pick the quorum of an ask.
var Risks = []string{"low", "medium", "high"}

// Rule is one line of tools.rules. Every condition set must hold; an
// empty condition holds for every call.
type Rule struct {
	// Name labels the rule in records and answers; empty is "rules[i]".
	Name string `mapstructure:"name" json:"name,omitempty"`
	// Tool is an RE2 pattern over the tool's name as the CLI names it,
	// anchored at both ends ("Write|Edit" is ^(?:Write|Edit)$).
	Tool string `mapstructure:"tool" json:"tool,omitempty"`
	// Kind is one of the common kinds (shell, edit, read, fetch, mcp).
	Kind Kind `mapstructure:"kind" json:"kind,omitempty"`
	// Match is an RE2 pattern searched in the input as a person reads
	// it (Texts): each string in it decoded, and each as a shell reads
	// it; a match in any of them holds.
	Match string `mapstructure:"match" json:"match,omitempty"`
	// OutsideWorktree, when true, holds only for a call that touches a
	// path outside the worktree.
	OutsideWorktree bool   `mapstructure:"outside_worktree" json:"outside_worktree,omitempty"`
	Action          Action `mapstructure:"action" json:"action"`
	// Reason is told to the agent when the rule denies, and to the
	// admins when it asks.
	Reason string `mapstructure:"reason" json:"reason,omitempty"`
	// Risk (low, medium, high) is an ask's risk: the quorum of admins it
	// needs is policy.quorum's for that risk. Empty is low.
	Risk string `mapstructure:"risk" json:"risk,omitempty"`
}

// Label names the i-th rule in records.
func (r Rule) Label(i int) string {
	if r.Name != "" {
		return r.Name
	}
	return fmt.Sprintf("rules[%d]", i)
}

// Call is a tool call to decide.
type Call struct {
	// CLI is the agent CLI (claude, codex, gemini, opencode); it picks
	// the names Kind reads.
	CLI  string
	Tool string
	// Input is the tool's input as the CLI sent it (JSON).
	Input json.RawMessage
	// CWD is the directory the CLI runs the tool in; relative paths are
	// read from it.
	CWD string
	// Worktree is the directory the agent may write in; empty is CWD.
	Worktree string
}

// Verdict is what the policy says of a call.
type Verdict struct {
	Action Action `json:"action"`
	Kind   Kind   `json:"kind"`
	// Rule is the label of the rule that matched; empty for the default.
	Rule   string `json:"rule,omitempty"`
	Reason string `json:"reason,omitempty"`
	Risk   string `json:"risk,omitempty"`
	// Paths are the paths the call touches, absolute; Outside says
	// whether one is outside the worktree.
	Paths   []string `json:"paths,omitempty"`
	Outside bool     `json:"outside_worktree,omitempty"`
}

// Policy is a compiled rule set. Build it with New.
type Policy struct {
	rules []compiled
	def   Action
}

type compiled struct {
	Rule
	label string
	tool  *regexp.Regexp
	match *regexp.Regexp
}

// Problem is what is wrong with one rule's field, for config's messages.
type Problem struct {
	// Field is "rules[i].field" or "default".
	Field, Message string
}

func (p Problem) Error() string { return p.Field + ": " + p.Message }

// Check lists what is wrong with a rule set and its default.
func Check(rules []Rule, def Action) []Problem {
	var ps []Problem
	add := func(f, format string, args ...any) {
		ps = append(ps, Problem{Field: f, Message: fmt.Sprintf(format, args...)})
	}
	if !slices.Contains(Actions(), def) {
		add("default", "must be allow, deny or ask, not %q", def)
	}
	for i, r := range rules {
		k := fmt.Sprintf("rules[%d]", i)
		if !slices.Contains(Actions(), r.Action) {
			add(k+".action", "must be allow, deny or ask, not %q", r.Action)
		}
		if r.Kind != "" && !slices.Contains(Kinds(), r.Kind) {
			add(k+".kind", "must be one of %s, not %q", kindList(), r.Kind)
		}
		if r.Risk != "" && !slices.Contains(Risks, r.Risk) {
			add(k+".risk", "must be low, medium or high, not %q", r.Risk)
		}
		if _, err := regexp.Compile(anchored(r.Tool)); r.Tool != "" && err != nil {
			add(k+".tool", "not an RE2 pattern: %v", err)
		}
		if _, err := regexp.Compile(r.Match); r.Match != "" && err != nil {
			add(k+".match", "not an RE2 pattern: %v", err)
		}
	}
	return ps
}

// New compiles a rule set; def applies when no rule matches.
func New(rules []Rule, def Action) (*Policy, error) {
	if ps := Check(rules, def); len(ps) > 0 {
		return nil, ps[0]
	}
	p := &Policy{def: def}
	for i, r := range rules {
		c := compiled{Rule: r, label: r.Label(i)}
		if r.Tool != "" {
			c.tool = regexp.MustCompile(anchored(r.Tool))
		}
		if r.Match != "" {
			c.match = regexp.MustCompile(r.Match)
		}
		p.rules = append(p.rules, c)
	}
	return p, nil
}

func anchored(re string) string { return "^(?:" + re + ")$" }

// Decide applies the first rule that matches c, else the default.
func (p *Policy) Decide(c Call) Verdict {
	kind := KindOf(c.CLI, c.Tool)
	paths := Paths(c.CLI, c.Tool, c.Input, c.CWD)
	root := c.Worktree
	if root == "" {
		root = c.CWD
	}
	outside := false
	for _, path := range paths {
		outside = outside || !Within(root, path)
	}
	v := Verdict{Action: p.def, Kind: kind, Paths: paths, Outside: outside}
	if p.def != Allow {
		v.Reason = fmt.Sprintf("no rule matched; tools.default is %s", p.def)
	}
	texts := Texts(c.Input)
	for _, r := range p.rules {
		switch {
		case r.tool != nil && !r.tool.MatchString(c.Tool),
			r.Kind != "" && r.Kind != kind,
			r.OutsideWorktree && !outside,
			r.match != nil && !slices.ContainsFunc(texts, r.match.MatchString):
			continue
		}
		v.Action, v.Rule, v.Reason, v.Risk = r.Action, r.label, r.Reason, r.Risk
		if v.Reason == "" {
			v.Reason = fmt.Sprintf("tool rule %s: %s", r.label, r.Action)
		}
		return v
	}
	return v
}

// Canonical returns input as canonical JSON: object keys sorted, no
// insignificant space, no HTML escaping. Input that is not JSON is
// returned as a JSON string of its bytes.
func Canonical(input json.RawMessage) []byte {
	if len(input) == 0 {
		return []byte("null")
	}
	var v any
	dec := json.NewDecoder(bytes.NewReader(input))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil || dec.More() {
		v = string(input)
	}
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return []byte("null")
	}
	return []byte(strings.TrimSuffix(b.String(), "\n"))
}

// CanonicalText is Canonical as a string.
func CanonicalText(input json.RawMessage) string { return string(Canonical(input)) }

// Texts are what Rule.Match is searched in: the input as canonical JSON,
// then each string in it as decoded (a tab is a tab, not \t; "\nc" is
// a newline and a c, not the word nc), then each as a shell reads it
// (ShellText: `g”it pu""sh` is git push).
func Texts(input json.RawMessage) []string {
	out := []string{CanonicalText(input)}
	var v any
	if json.Unmarshal(input, &v) != nil {
		return out
	}
	var walk func(any)
	walk = func(v any) {
		switch v := v.(type) {
		case string:
			out = append(out, v)
			if sh := ShellText(v); sh != v {
				out = append(out, sh)
			}
		case []any:
			for _, x := range v {
				walk(x)
			}
		case map[string]any:
			keys := slices.Sorted(maps.Keys(v))
			for _, k := range keys {
				walk(v[k])
			}
		}
	}
	walk(v)
	return out
}

var (
	shellSplice = strings.NewReplacer("\\\n", " ", "${IFS}", " ", "$IFS", " ")
	shellQuotes = strings.NewReplacer("'", "", "\"", "", "\\", "")
	shellBlanks = regexp.MustCompile(`[ \t\r\v\f]+`)
)

// ShellText is a command line with what a shell takes away before it
// runs a word: quotes and backslashes gone, a backslash-newline and $IFS
// a space, every run of blanks (tabs too) one space. A rule written for
// `git push` then matches `g”it<TAB>pu\sh`.
func ShellText(s string) string {
	s = shellSplice.Replace(s)
	s = shellQuotes.Replace(strings.ReplaceAll(s, "$'", "'"))
	return shellBlanks.ReplaceAllString(s, " ")
}
