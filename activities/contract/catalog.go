// Package contract is ampflow's risk contracts (AMCP): a catalog of the
// primitives an agent may ask to run, each with its risk signals and its
// execution blueprint; a deterministic resolver from an intent to one
// primitive (keyword scoring, no language model); the scoring of a
// primitive's risk into a level and a minimum handling that overrides
// may only raise; and the contract itself, immutable, HMAC-signed over
// everything it binds, time-limited and single use.
//
// The package is pure: no I/O beyond reading a catalog file, no clock but
// the one passed in. The store keeps contracts (activities/ssot), the
// HTTP handlers serve them (integrations/amcp).
package contract

import (
	"bytes"
	_ "embed"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

//go:embed catalog.yaml
var defaultCatalog []byte

// DefaultCatalogYAML returns the embedded default catalog's file.
func DefaultCatalogYAML() []byte { return bytes.Clone(defaultCatalog) }

// Handling is a minimum handling: what must happen before a contract may
// be executed. The values are ordered; an override may only move up.
type Handling string

// Minimum handlings, lowest first.
const (
	HandlingAllow         Handling = "allow"
	HandlingLog           Handling = "log"
	HandlingConfirm       Handling = "confirm"
	HandlingStrictConfirm Handling = "strict_confirm"
	HandlingHumanRequired Handling = "human_required"
)

// Handlings lists every Handling, lowest first.
var Handlings = []Handling{HandlingAllow, HandlingLog, HandlingConfirm, HandlingStrictConfirm, HandlingHumanRequired}

// Rank orders handlings: a higher rank is stricter; -1 is unknown.
func (h Handling) Rank() int { return slices.Index(Handlings, h) }

// NeedsApproval reports whether a contract of this handling opens a gate
// and needs an approvalToken at execute.
func (h Handling) NeedsApproval() bool { return h.Rank() >= HandlingStrictConfirm.Rank() }

// Catalog is a validated primitive catalog.
type Catalog struct {
	Version     int          `yaml:"version" json:"version"`
	Scoring     Scoring      `yaml:"scoring" json:"scoring"`
	Resolution  Tuning       `yaml:"resolution" json:"resolution"`
	Escalations []Escalation `yaml:"escalations" json:"escalations,omitempty"`
	Primitives  []Primitive  `yaml:"primitives" json:"primitives"`

	byName map[string]int
	// words are the primitives' keywords, normalised, by primitive index.
	words [][][]string
}

// Scoring turns risk signals into a score and the score into a level.
type Scoring struct {
	// Weights names every known signal and what it adds to a score.
	Weights     map[string]int `yaml:"weights" json:"weights"`
	Compounds   []Compound     `yaml:"compounds" json:"compounds,omitempty"`
	Multipliers []Multiplier   `yaml:"multipliers" json:"multipliers,omitempty"`
	// Levels ascend by Min; the first has Min 0.
	Levels []Level `yaml:"levels" json:"levels"`
}

// Compound adds to a score when every one of its signals is set.
type Compound struct {
	Name string   `yaml:"name" json:"name"`
	When []string `yaml:"when" json:"when"`
	Add  int      `yaml:"add" json:"add"`
}

// Multiplier multiplies a score when its signal is set.
type Multiplier struct {
	Name   string  `yaml:"name" json:"name"`
	When   string  `yaml:"when" json:"when"`
	Factor float64 `yaml:"factor" json:"factor"`
}

// Level is a band of scores and the minimum handling it requires.
type Level struct {
	Level           string   `yaml:"level" json:"level"`
	Min             int      `yaml:"min" json:"min"`
	MinimumHandling Handling `yaml:"minimumHandling" json:"minimumHandling"`
}

// Tuning tunes the resolver.
type Tuning struct {
	// ClarifyRatio: when the second candidate scores at least this share
	// of the first, the intent is ambiguous (CLARIFY).
	ClarifyRatio float64 `yaml:"clarify_ratio" json:"clarify_ratio"`
}

// Escalation raises the minimum handling of the contracts it matches.
type Escalation struct {
	// Primitive is a name, or a prefix pattern ending in ".*".
	Primitive string `yaml:"primitive" json:"primitive"`
	// Parameters must all equal the contract's, compared as text,
	// normalised: NFKC, case folded, without format characters or
	// surrounding space.
	Parameters      map[string]string `yaml:"parameters" json:"parameters,omitempty"`
	MinimumHandling Handling          `yaml:"minimumHandling" json:"minimumHandling"`
	Reason          string            `yaml:"reason" json:"reason,omitempty"`
}

// Primitive is one action an agent may ask for.
type Primitive struct {
	// Name is dot-notation; its first segment is the provider unless
	// Provider says otherwise.
	Name        string      `yaml:"name" json:"name"`
	Provider    string      `yaml:"provider" json:"provider,omitempty"`
	Description string      `yaml:"description" json:"description"`
	Keywords    []string    `yaml:"keywords" json:"keywords"`
	Parameters  []Parameter `yaml:"parameters" json:"parameters"`
	// Signals are the primitive's risk signals; only true ones count.
	Signals   map[string]bool `yaml:"signals" json:"signals"`
	Blueprint Blueprint       `yaml:"blueprint" json:"blueprint"`
}

// Parameter is one parameter of a primitive.
type Parameter struct {
	Name        string `yaml:"name" json:"name"`
	In          string `yaml:"in" json:"in"` // path, query, body or arg (a command's)
	Type        string `yaml:"type" json:"type,omitempty"`
	Required    bool   `yaml:"required" json:"required"`
	Description string `yaml:"description" json:"description,omitempty"`
}

// Blueprint is how a primitive is executed: an HTTP call (Endpoint,
// Method, ContentType, Auth) or a Command. "{name}" in the endpoint, the
// method or a command argument stands for the parameter's value.
type Blueprint struct {
	Endpoint    string   `yaml:"endpoint" json:"endpoint,omitempty"`
	Method      string   `yaml:"method" json:"method,omitempty"`
	ContentType string   `yaml:"contentType" json:"contentType,omitempty"`
	Auth        *Auth    `yaml:"auth" json:"auth,omitempty"`
	Command     []string `yaml:"command" json:"command,omitempty"`
}

// Auth is what an HTTP blueprint's call needs to authenticate.
type Auth struct {
	Type   string   `yaml:"type" json:"type"` // Bearer, ApiKey, OAuth2 or None
	Header string   `yaml:"header" json:"header,omitempty"`
	Scopes []string `yaml:"scopes" json:"scopes,omitempty"`
}

// ProviderOf is the primitive's provider.
func (p Primitive) ProviderOf() string {
	if p.Provider != "" {
		return p.Provider
	}
	name, _, _ := strings.Cut(p.Name, ".")
	return name
}

// Required lists the names of the required parameters, in order.
func (p Primitive) Required() []string {
	var out []string
	for _, q := range p.Parameters {
		if q.Required {
			out = append(out, q.Name)
		}
	}
	return out
}

// Lookup returns the primitive named name.
func (c *Catalog) Lookup(name string) (Primitive, bool) {
	i, ok := c.byName[name]
	if !ok {
		return Primitive{}, false
	}
	return c.Primitives[i], true
}

// Default returns the embedded default catalog.
func Default() *Catalog {
	c, err := Parse(defaultCatalog, "default catalog")
	if err != nil {
		// The default is a constant; TestDefaultCatalog parses it.
		panic(err)
	}
	return c
}

// Load reads and validates the catalog file at path; an empty path is
// the default catalog. Every problem names its key path (under
// gate.primitives for the file itself).
func Load(path string) (*Catalog, error) {
	if path == "" {
		return Default(), nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("gate.primitives: reading the catalog: %w", err)
	}
	return Parse(data, path)
}

// CatalogError lists every problem of a catalog, each a key path and why.
type CatalogError struct {
	Source   string
	Problems []string
}

func (e *CatalogError) Error() string {
	return "primitive catalog " + e.Source + ": " + strings.Join(e.Problems, "; ")
}

// Parse decodes and validates a catalog; source names it in errors.
func Parse(data []byte, source string) (*Catalog, error) {
	var c Catalog
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&c); err != nil {
		var te *yaml.TypeError
		if errors.As(err, &te) {
			ps := make([]string, len(te.Errors))
			for i, e := range te.Errors {
				ps[i] = sectionNames.Replace(e)
			}
			return nil, &CatalogError{Source: source, Problems: ps}
		}
		return nil, &CatalogError{Source: source, Problems: []string{err.Error()}}
	}
	if err := c.validate(source); err != nil {
		return nil, err
	}
	c.index()
	return &c, nil
}

// sectionNames puts the catalog's key paths in place of the Go types in
// the YAML decoder's messages ("field x not found in primitives[].blueprint").
var sectionNames = strings.NewReplacer(
	"type contract.Catalog", "the catalog's top level",
	"type contract.Scoring", "scoring",
	"type contract.Compound", "scoring.compounds[]",
	"type contract.Multiplier", "scoring.multipliers[]",
	"type contract.Level", "scoring.levels[]",
	"type contract.Tuning", "resolution",
	"type contract.Escalation", "escalations[]",
	"type contract.Primitive", "primitives[]",
	"type contract.Parameter", "primitives[].parameters[]",
	"type contract.Blueprint", "primitives[].blueprint",
	"type contract.Auth", "primitives[].blueprint.auth",
)

func (c *Catalog) index() {
	c.byName = make(map[string]int, len(c.Primitives))
	c.words = make([][][]string, len(c.Primitives))
	for i, p := range c.Primitives {
		c.byName[p.Name] = i
		// The name itself is a keyword: "git.force_push" reads "git force push".
		c.words[i] = append(c.words[i], words(p.Name))
		for _, k := range p.Keywords {
			c.words[i] = append(c.words[i], words(k))
		}
	}
}
