package httpapi

import (
	"slices"
	"strings"

	"github.com/ampflow/ampflow/amp"
)

// Identity is what a route takes as its caller's credentials, stated
// once: the route registers with it, and the OpenAPI document's
// security of the route's operation is made from it.
type Identity string

// The identities a route may take.
const (
	// IdentityToken is an API token of auth.tokens (Authorization:
	// Bearer), of the route's roles.
	IdentityToken Identity = "token"
	// IdentityAgentKey is a gate agent's key (gate.agents), which the
	// route's handler checks itself.
	IdentityAgentKey Identity = "agent_key"
	// IdentityNone is no credentials at all.
	IdentityNone Identity = "none"
)

// Names of the OpenAPI security schemes.
const (
	SchemeToken    = "apiToken"
	SchemeAgentKey = "agentKey"
)

// tokenRoles are the roles an API token may have.
var tokenRoles = []amp.Role{amp.RoleExecutor, amp.RoleReviewer, amp.RoleCoordinator, amp.RoleAdmin}

// routeAuth is a route's identity and, for a token, the roles allowed
// (empty: any role).
type routeAuth struct {
	identity Identity
	roles    []amp.Role
}

// Security is the OpenAPI security requirement of a route taking
// identity with roles: the API token scheme with the role names allowed
// (every role when roles is empty), in the order executor, reviewer, coordinator, admin, the agent key scheme, or none.
func Security(identity Identity, roles []amp.Role) []any {
	switch identity {
	case IdentityNone:
		return []any{}
	case IdentityAgentKey:
		return []any{map[string]any{SchemeAgentKey: []any{}}}
	}
	names := []any{}
	for _, r := range tokenRoles {
		if len(roles) == 0 || slices.Contains(roles, r) {
			names = append(names, string(r))
		}
	}
	return []any{map[string]any{SchemeToken: names}}
}

// SecuritySchemes are the document's securitySchemes.
func SecuritySchemes() map[string]any {
	return map[string]any{
		SchemeToken: map[string]any{"type": "http", "scheme": "bearer",
			"description": "An API token of auth.tokens. Its role (executor, reviewer, coordinator, admin) decides what it may do, and an operation's requirement lists the roles it takes; its name is who acts. With no tokens configured the API is open and every caller is an admin."},
		SchemeAgentKey: map[string]any{"type": "http", "scheme": "bearer",
			"description": "A gate agent's key (gate.agents: the variable key_env names), not an API token: it speaks only as its own agent_id."},
	}
}

// Identities lists every route's identity as "METHOD /path" → the
// OpenAPI security requirement made from it.
func (s *Server) Identities() map[string][]any {
	out := map[string][]any{}
	for p, a := range s.auth {
		out[p] = Security(a.identity, a.roles)
	}
	return out
}

// agentKeyRoutes names the paths that take agent keys, for the error
// that tells an agent key where it belongs.
func (s *Server) agentKeyRoutes() string {
	var paths []string
	for _, p := range s.patterns {
		if s.auth[p].identity != IdentityAgentKey {
			continue
		}
		_, path, _ := strings.Cut(p, " ")
		if i := strings.Index(path, "/{"); i > 0 {
			path = path[:i]
		}
		if !slices.Contains(paths, path) {
			paths = append(paths, path)
		}
	}
	return strings.Join(paths, ", ")
}

// isAgentKey reports whether an Authorization header carries a key one
// of the agent-key routes takes.
func (s *Server) isAgentKey(header string) bool {
	for _, f := range s.agentKeys {
		if f(header) {
			return true
		}
	}
	return false
}
