package contract

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
)

// MaxScore caps a primitive's risk score.
const MaxScore = 240

var (
	primitiveName = regexp.MustCompile(`^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)+$`)
	paramName     = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	placeholder   = regexp.MustCompile(`\{([^{}]*)\}`)
	methods       = []string{"GET", "POST", "PUT", "PATCH", "DELETE"}
	ins           = []string{"path", "query", "body", "arg"}
	authTypes     = []string{"Bearer", "ApiKey", "OAuth2", "None"}
)

type catalogProblems []string

func (ps *catalogProblems) add(key, format string, args ...any) {
	*ps = append(*ps, key+": "+fmt.Sprintf(format, args...))
}

func (c *Catalog) validate(source string) error {
	var ps catalogProblems
	if c.Version != 1 {
		ps.add("version", "must be 1, not %d", c.Version)
	}
	c.validateScoring(&ps)
	if r := c.Resolution.ClarifyRatio; r <= 0 || r > 1 {
		ps.add("resolution.clarify_ratio", "must be more than 0 and at most 1, not %g", r)
	}
	names := map[string]int{}
	if len(c.Primitives) == 0 {
		ps.add("primitives", "must list at least one primitive")
	}
	for i, p := range c.Primitives {
		key := fmt.Sprintf("primitives[%d]", i)
		if j, dup := names[p.Name]; dup {
			ps.add(key+".name", "%q is primitives[%d]'s name already", p.Name, j)
		}
		names[p.Name] = i
		c.validatePrimitive(&ps, key, p)
	}
	for i, e := range c.Escalations {
		key := fmt.Sprintf("escalations[%d]", i)
		switch pat := e.Primitive; {
		case pat == "":
			ps.add(key+".primitive", "is required")
		case strings.HasSuffix(pat, ".*"):
		default:
			if _, ok := names[pat]; !ok {
				ps.add(key+".primitive", "names no primitive of the catalog: %q", pat)
			}
		}
		if e.MinimumHandling.Rank() < 0 {
			ps.add(key+".minimumHandling", "must be one of %s, not %q", handlingList(), e.MinimumHandling)
		}
	}
	if len(ps) > 0 {
		return &CatalogError{Source: source, Problems: ps}
	}
	return nil
}

func (c *Catalog) validateScoring(ps *catalogProblems) {
	s := c.Scoring
	if len(s.Weights) == 0 {
		ps.add("scoring.weights", "must name at least one signal")
	}
	for _, name := range sortedKeys(s.Weights) {
		if w := s.Weights[name]; w < 0 || w > MaxScore {
			ps.add("scoring.weights."+name, "must be from 0 to %d, not %d", MaxScore, w)
		}
	}
	for i, cp := range s.Compounds {
		key := fmt.Sprintf("scoring.compounds[%d]", i)
		if cp.Name == "" {
			ps.add(key+".name", "is required")
		}
		if len(cp.When) < 2 {
			ps.add(key+".when", "must name at least two signals")
		}
		for j, sig := range cp.When {
			c.knownSignal(ps, fmt.Sprintf("%s.when[%d]", key, j), sig)
		}
		if cp.Add < 0 || cp.Add > MaxScore {
			ps.add(key+".add", "must be from 0 to %d, not %d", MaxScore, cp.Add)
		}
	}
	for i, m := range s.Multipliers {
		key := fmt.Sprintf("scoring.multipliers[%d]", i)
		if m.Name == "" {
			ps.add(key+".name", "is required")
		}
		c.knownSignal(ps, key+".when", m.When)
		if m.Factor < 1 || m.Factor > 10 {
			ps.add(key+".factor", "must be from 1 to 10, not %g", m.Factor)
		}
	}
	if len(s.Levels) == 0 {
		ps.add("scoring.levels", "must list at least one level")
	}
	for i, l := range s.Levels {
		key := fmt.Sprintf("scoring.levels[%d]", i)
		if l.Level == "" {
			ps.add(key+".level", "is required")
		}
		switch {
		case i == 0 && l.Min != 0:
			ps.add(key+".min", "must be 0 for the first level, not %d", l.Min)
		case i > 0 && l.Min <= s.Levels[i-1].Min:
			ps.add(key+".min", "must be more than scoring.levels[%d].min (%d), not %d", i-1, s.Levels[i-1].Min, l.Min)
		case l.Min > MaxScore:
			ps.add(key+".min", "must be at most %d, not %d", MaxScore, l.Min)
		}
		if l.MinimumHandling.Rank() < 0 {
			ps.add(key+".minimumHandling", "must be one of %s, not %q", handlingList(), l.MinimumHandling)
		} else if i > 0 && l.MinimumHandling.Rank() < s.Levels[i-1].MinimumHandling.Rank() {
			ps.add(key+".minimumHandling", "must not be lower than scoring.levels[%d].minimumHandling (%s): a higher score never needs less handling", i-1, s.Levels[i-1].MinimumHandling)
		}
	}
}

func (c *Catalog) knownSignal(ps *catalogProblems, key, sig string) {
	if _, ok := c.Scoring.Weights[sig]; !ok {
		ps.add(key, "unknown signal %q; scoring.weights names %s", sig, strings.Join(sortedKeys(c.Scoring.Weights), ", "))
	}
}

func (c *Catalog) validatePrimitive(ps *catalogProblems, key string, p Primitive) {
	if !primitiveName.MatchString(p.Name) {
		ps.add(key+".name", "must be dot-notation in lower case (such as git.push), not %q", p.Name)
	}
	if strings.TrimSpace(p.Description) == "" {
		ps.add(key+".description", "is required")
	}
	if len(p.Keywords) == 0 {
		ps.add(key+".keywords", "must list at least one keyword")
	}
	for i, k := range p.Keywords {
		if len(words(k)) == 0 {
			ps.add(fmt.Sprintf("%s.keywords[%d]", key, i), "must hold a letter or a digit")
		}
	}
	params := map[string]bool{}
	for i, q := range p.Parameters {
		pk := fmt.Sprintf("%s.parameters[%d]", key, i)
		if !paramName.MatchString(q.Name) {
			ps.add(pk+".name", "must be a name of letters, digits and _, not %q", q.Name)
		}
		if params[q.Name] {
			ps.add(pk+".name", "%q is listed already", q.Name)
		}
		params[q.Name] = true
		if !slices.Contains(ins, q.In) {
			ps.add(pk+".in", "must be one of %s, not %q", strings.Join(ins, ", "), q.In)
		}
	}
	for _, sig := range sortedKeys(p.Signals) {
		c.knownSignal(ps, key+".signals."+sig, sig)
	}
	b, bk := p.Blueprint, key+".blueprint"
	refs := func(k, s string) {
		for _, m := range placeholder.FindAllStringSubmatch(s, -1) {
			if !params[m[1]] {
				ps.add(k, "{%s} names no parameter of the primitive", m[1])
			}
		}
	}
	switch {
	case b.Endpoint == "" && len(b.Command) == 0:
		ps.add(bk, "needs an endpoint or a command")
	case b.Endpoint != "" && len(b.Command) > 0:
		ps.add(bk, "has both an endpoint and a command; keep one")
	case b.Endpoint != "":
		refs(bk+".endpoint", b.Endpoint)
		if !slices.Contains(methods, b.Method) && !placeholder.MatchString(b.Method) {
			ps.add(bk+".method", "must be one of %s or a {parameter}, not %q", strings.Join(methods, ", "), b.Method)
		}
		refs(bk+".method", b.Method)
		if b.ContentType == "" {
			ps.add(bk+".contentType", "is required with an endpoint")
		}
		if b.Auth == nil {
			ps.add(bk+".auth", "is required with an endpoint")
		} else if !slices.Contains(authTypes, b.Auth.Type) {
			ps.add(bk+".auth.type", "must be one of %s, not %q", strings.Join(authTypes, ", "), b.Auth.Type)
		}
	default:
		for i, arg := range b.Command {
			refs(fmt.Sprintf("%s.command[%d]", bk, i), arg)
		}
		if b.Method != "" || b.ContentType != "" || b.Auth != nil {
			ps.add(bk, "a command takes no method, contentType or auth")
		}
	}
}

func handlingList() string {
	s := make([]string, len(Handlings))
	for i, h := range Handlings {
		s[i] = string(h)
	}
	return strings.Join(s, ", ")
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
