package contract

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// IDPrefix starts every contract id: "cnt_" and a UUID.
const IDPrefix = "cnt_"

// DefaultTTL is how long a contract may be redeemed when gate.contract_ttl
// is not set.
const DefaultTTL = 15 * time.Minute

// States of a contract.
const (
	StateIssued           = "issued"            // may be executed (no approval needed)
	StateAwaitingApproval = "awaiting_approval" // its gate is open
	StateApproved         = "approved"          // its gate approved: the approvalToken is out
	StateRejected         = "rejected"          // its gate rejected (or expired)
	StateRedeemed         = "redeemed"          // executed once; never again
	StateExpired          = "expired"           // past expiresAt before it was redeemed
)

// Contract is what /v1/decide issues: one primitive with its parameters,
// the risk evaluated for exactly those, and the blueprint that runs them.
// Every field but Signature is bound by it.
type Contract struct {
	ID                 string         `json:"contractId"`
	Owner              string         `json:"owner"`
	SessionID          string         `json:"sessionId,omitempty"`
	Primitive          string         `json:"primitive"`
	Parameters         map[string]any `json:"parameters"`
	PrimitiveRiskScore int            `json:"primitiveRiskScore"`
	Risk               Risk           `json:"risk"`
	Blueprint          Rendered       `json:"blueprint"`
	IssuedAt           time.Time      `json:"issuedAt"`
	ExpiresAt          time.Time      `json:"expiresAt"`
}

// Rendered is a blueprint with the contract's parameters in place.
type Rendered struct {
	Endpoint    string         `json:"endpoint,omitempty"`
	Method      string         `json:"method,omitempty"`
	ContentType string         `json:"contentType,omitempty"`
	Auth        *Auth          `json:"auth,omitempty"`
	Command     []string       `json:"command,omitempty"`
	Parameters  ParameterSpecs `json:"parameters"`
	// Values are the contract's parameters.
	Values map[string]any `json:"values"`
}

// ParameterSpecs are a blueprint's parameters by where they go.
type ParameterSpecs struct {
	Path  map[string]ParameterSpec `json:"path,omitempty"`
	Query map[string]ParameterSpec `json:"query,omitempty"`
	Body  map[string]ParameterSpec `json:"body,omitempty"`
	Args  map[string]ParameterSpec `json:"args,omitempty"`
}

// ParameterSpec describes one parameter of a blueprint.
type ParameterSpec struct {
	Type        string `json:"type,omitempty"`
	Required    bool   `json:"required"`
	Description string `json:"description,omitempty"`
}

// Issue builds the contract of a resolution that decided EXECUTE: a new
// id, now and the expiry now+ttl (both to the microsecond, as stored).
func Issue(res Resolution, params map[string]any, owner, session string, now time.Time, ttl time.Duration) (Contract, error) {
	if res.Decision != DecisionExecute || res.Primitive == nil {
		return Contract{}, fmt.Errorf("issuing a contract: the resolution decided %s", res.Decision)
	}
	id, err := NewID()
	if err != nil {
		return Contract{}, err
	}
	if params == nil {
		params = map[string]any{}
	}
	// The parameters go through JSON once so the stored contract, read
	// back, is the same value the signature was made over.
	var norm map[string]any
	if err := json.Unmarshal(canonical(params), &norm); err != nil {
		return Contract{}, fmt.Errorf("issuing a contract: parameters: %w", err)
	}
	now = now.UTC().Truncate(time.Microsecond)
	return Contract{
		ID: id, Owner: owner, SessionID: session,
		Primitive: res.Primitive.Name, Parameters: norm,
		PrimitiveRiskScore: res.Score, Risk: res.Risk,
		Blueprint: Render(*res.Primitive, norm),
		IssuedAt:  now, ExpiresAt: now.Add(ttl),
	}, nil
}

// NewID returns a fresh contract id.
func NewID() (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("making a contract id: %w", err)
	}
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return IDPrefix + h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:], nil
}

// Render puts params into p's blueprint.
func Render(p Primitive, params map[string]any) Rendered {
	b := p.Blueprint
	fill := func(s string) string {
		return placeholder.ReplaceAllStringFunc(s, func(m string) string {
			return text(params[m[1:len(m)-1]])
		})
	}
	r := Rendered{ContentType: b.ContentType, Auth: b.Auth, Values: params}
	if b.Endpoint != "" {
		r.Endpoint, r.Method = fill(b.Endpoint), strings.ToUpper(fill(b.Method))
	}
	for _, arg := range b.Command {
		r.Command = append(r.Command, fill(arg))
	}
	for _, q := range p.Parameters {
		spec := ParameterSpec{Type: q.Type, Required: q.Required, Description: q.Description}
		var m *map[string]ParameterSpec
		switch q.In {
		case "path":
			m = &r.Parameters.Path
		case "query":
			m = &r.Parameters.Query
		case "body":
			m = &r.Parameters.Body
		default:
			m = &r.Parameters.Args
		}
		if *m == nil {
			*m = map[string]ParameterSpec{}
		}
		(*m)[q.Name] = spec
	}
	return r
}

// Canonical is the contract's signed form: its JSON with every object's
// keys sorted and times in RFC 3339 UTC to the microsecond.
func (c Contract) Canonical() []byte {
	c.IssuedAt = c.IssuedAt.UTC()
	c.ExpiresAt = c.ExpiresAt.UTC()
	return canonical(c)
}

// Digest is the SHA-256 of the canonical form in hex: what an approval of
// the contract is bound to.
func (c Contract) Digest() string {
	sum := sha256.Sum256(c.Canonical())
	return hex.EncodeToString(sum[:])
}

// Sign is the HMAC-SHA256 of the canonical form under secret, in hex.
func (c Contract) Sign(secret []byte) string {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte("ampflow-contract/v1\n"))
	m.Write(c.Canonical())
	return hex.EncodeToString(m.Sum(nil))
}

// Verify reports whether sig is c's signature under secret.
func (c Contract) Verify(secret []byte, sig string) bool {
	want, err := hex.DecodeString(sig)
	if err != nil {
		return false
	}
	got, _ := hex.DecodeString(c.Sign(secret))
	return hmac.Equal(got, want)
}

// ApprovalTokenPrefix starts every approval token.
const ApprovalTokenPrefix = "apr_"

// ApprovalToken is the token an approved contract's gate issues: an HMAC
// over the contract's id and digest, so it is derived, never stored, and
// approves that contract as it was signed and nothing else.
func ApprovalToken(secret []byte, id, digest string) string {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(id + "\n" + digest + "\napproved"))
	return ApprovalTokenPrefix + hex.EncodeToString(m.Sum(nil))
}

// CheckApprovalToken reports whether token approves contract id of digest.
func CheckApprovalToken(secret []byte, id, digest, token string) bool {
	return hmac.Equal([]byte(ApprovalToken(secret, id, digest)), []byte(token))
}

// Expired reports whether the contract may no longer be redeemed at now.
func (c Contract) Expired(now time.Time) bool { return !now.Before(c.ExpiresAt) }

// canonical is v's JSON: encoding/json sorts map keys, and struct fields
// come in declaration order, so equal values give equal bytes.
func canonical(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		// Parameters come from decoded JSON; nothing else is marshalled.
		return []byte(fmt.Sprintf("%q", err.Error()))
	}
	return b
}
