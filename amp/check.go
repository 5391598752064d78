package amp

import (
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// maxInt caps every integer field so that a valid message fits a 32-bit
// integer in any language an agent may be written in.
const maxInt = math.MaxInt32

// checker collects field errors while walking a decoded tree.
type checker struct {
	errs []FieldError
}

func (c *checker) add(path, problem string) {
	c.errs = append(c.errs, FieldError{Path: path, Problem: problem})
}

func (c *checker) addf(path, format string, args ...any) {
	c.add(path, fmt.Sprintf(format, args...))
}

// rule checks one present value.
type rule func(c *checker, path string, v any)

// field is one known key of an object.
type field struct {
	name     string
	required bool
	rule     rule
}

func req(name string, r rule) field { return field{name: name, required: true, rule: r} }
func opt(name string, r rule) field { return field{name: name, rule: r} }

// object checks v against fields, runs post (if any) for cross-field
// rules, reports unknown keys, and returns the object (nil when v is not
// one). Its errors come out in the order of fields, unknown keys last.
func (c *checker) object(path string, v any, fields []field, post func(c *checker, path string, m map[string]any)) map[string]any {
	m, ok := v.(map[string]any)
	if !ok {
		c.add(path, "must be an object")
		return nil
	}
	start := len(c.errs)
	for _, f := range fields {
		fv, ok := m[f.name]
		p := joinKey(path, f.name)
		if !ok {
			if f.required {
				c.add(p, "required")
			}
			continue
		}
		f.rule(c, p, fv)
	}
	if post != nil {
		post(c, path, m)
	}
	var unknown []string
	for k := range m {
		if !slices.ContainsFunc(fields, func(f field) bool { return f.name == k }) {
			unknown = append(unknown, k)
		}
	}
	slices.Sort(unknown)
	for _, k := range unknown {
		problem := "unknown field"
		if near := nearest(k, fields); near != "" {
			problem += fmt.Sprintf(" (did you mean %q?)", near)
		}
		c.add(joinKey(path, k), problem)
	}
	rank := func(e FieldError) int {
		k := childKey(path, e.Path)
		if i := slices.IndexFunc(fields, func(f field) bool { return f.name == k }); i >= 0 {
			return i
		}
		return len(fields)
	}
	slices.SortStableFunc(c.errs[start:], func(a, b FieldError) int { return rank(a) - rank(b) })
	return m
}

// childKey is the key of parent's object that path lies under, or "" for
// a key that needed quoting (never a known field).
func childKey(parent, path string) string {
	if parent != RootPath {
		path = strings.TrimPrefix(strings.TrimPrefix(path, parent), ".")
	}
	if i := strings.IndexAny(path, ".["); i >= 0 {
		return path[:i]
	}
	return path
}

func objectOf(fields []field, post func(c *checker, path string, m map[string]any)) rule {
	return func(c *checker, path string, v any) {
		c.object(path, v, fields, post)
	}
}

func anyString(c *checker, path string, v any) {
	if _, ok := v.(string); !ok {
		c.add(path, "must be a string")
	}
}

func text(c *checker, path string, v any) {
	s, ok := v.(string)
	switch {
	case !ok:
		c.add(path, "must be a string")
	case s == "":
		c.add(path, "must not be empty")
	}
}

func oneOf[S ~string](values ...S) rule {
	list := make([]string, len(values))
	for i, v := range values {
		list[i] = strconv.Quote(string(v))
	}
	problem := "must be one of " + strings.Join(list, ", ")
	if len(values) == 1 {
		problem = "must be " + list[0]
	}
	return func(c *checker, path string, v any) {
		s, ok := v.(string)
		if !ok || !slices.Contains(values, S(s)) {
			c.add(path, problem)
		}
	}
}

func matching(re *regexp.Regexp, what string) rule {
	return func(c *checker, path string, v any) {
		s, ok := v.(string)
		switch {
		case !ok:
			c.add(path, "must be a string")
		case !re.MatchString(s):
			c.add(path, "must be "+what)
		}
	}
}

func boolean(c *checker, path string, v any) {
	if _, ok := v.(bool); !ok {
		c.add(path, "must be a boolean")
	}
}

func boolOrNull(c *checker, path string, v any) {
	if _, ok := v.(bool); !ok && v != nil {
		c.add(path, "must be true, false or null")
	}
}

// integer accepts only integer literals (no fraction or exponent), so that
// every accepted value decodes into a Go int unchanged.
func integer(min, max int64) rule {
	return func(c *checker, path string, v any) {
		n, ok := v.(json.Number)
		switch {
		case !ok:
			c.add(path, "must be an integer")
			return
		case strings.ContainsAny(string(n), ".eE"):
			c.add(path, "must be an integer written without fraction or exponent")
			return
		}
		i, err := strconv.ParseInt(string(n), 10, 64)
		switch {
		case (err == nil && i < min) || (err != nil && strings.HasPrefix(string(n), "-")):
			c.addf(path, "must be at least %d", min)
		case err != nil || i > max:
			c.addf(path, "must be at most %d", max)
		}
	}
}

func number(min, max float64) rule {
	return func(c *checker, path string, v any) {
		n, ok := v.(json.Number)
		if !ok {
			c.add(path, "must be a number")
			return
		}
		f, err := strconv.ParseFloat(string(n), 64)
		if err != nil || f < min || f > max {
			c.addf(path, "must be between %g and %g", min, max)
		}
	}
}

func arrayOf(minItems int, item rule) rule {
	return func(c *checker, path string, v any) {
		a, ok := v.([]any)
		switch {
		case !ok:
			c.add(path, "must be an array")
			return
		case len(a) < minItems && minItems == 1:
			c.add(path, "must not be empty")
		case len(a) < minItems:
			c.addf(path, "must have at least %d items", minItems)
		}
		for i, e := range a {
			item(c, joinIndex(path, i), e)
		}
	}
}

// freeObject accepts any object; its numbers must still fit a float64,
// which is how ampflow decodes them.
func freeObject(c *checker, path string, v any) {
	if _, ok := v.(map[string]any); !ok {
		c.add(path, "must be an object")
		return
	}
	c.freeValue(path, v)
}

func (c *checker) freeValue(path string, v any) {
	switch v := v.(type) {
	case json.Number:
		if _, err := strconv.ParseFloat(string(v), 64); err != nil {
			c.add(path, "number out of range")
		}
	case []any:
		for i, e := range v {
			c.freeValue(joinIndex(path, i), e)
		}
	case map[string]any:
		for _, k := range sortedKeys(v) {
			c.freeValue(joinKey(path, k), v[k])
		}
	}
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// plainKey reports whether a key can be written after a dot in a path.
func plainKey(k string) bool {
	for i, r := range k {
		letter := r == '_' || ('a' <= r && r <= 'z') || ('A' <= r && r <= 'Z')
		if !letter && (i == 0 || r < '0' || r > '9') {
			return false
		}
	}
	return k != ""
}

func joinKey(path, key string) string {
	if path == RootPath {
		path = ""
	}
	switch {
	case !plainKey(key):
		return path + "[" + strconv.Quote(key) + "]"
	case path == "":
		return key
	}
	return path + "." + key
}

func joinIndex(path string, i int) string {
	return path + "[" + strconv.Itoa(i) + "]"
}

// nearest suggests the known field an unknown key was probably meant to
// be: the same name in another case, or one at most two edits away.
func nearest(key string, fields []field) string {
	best, bestDist := "", 3
	for _, f := range fields {
		if strings.EqualFold(key, f.name) {
			return f.name
		}
		if d := editDistance(key, f.name); d < bestDist {
			best, bestDist = f.name, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance between a and b, in bytes.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
