package httpapi

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"net/http"
	"slices"
	"strings"

	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/runcred"
	"github.com/ampflow/ampflow/amp/task"
	"github.com/ampflow/ampflow/config"
)

// OpenName is the caller's name (the by of decisions, cancels and
// replans) when no tokens are configured and Options.OpenName is empty.
const OpenName = "local"

// token is a configured token, kept as a hash so that comparing is
// constant-time whatever the presented token's length.
type token struct {
	sum  [sha256.Size]byte
	role amp.Role
	name string
	id   string
}

func hashTokens(in []config.AuthToken) []token {
	var out []token
	for _, t := range in {
		if t.Token == "" {
			continue
		}
		out = append(out, token{sum: sha256.Sum256([]byte(t.Token)), role: t.Role, name: t.Name, id: strings.TrimSpace(t.ID)})
	}
	return out
}

// caller is who sent a request.
type caller struct {
	name string
	// id is the token's optional id: the agent's other name in the mesh.
	id   string
	role amp.Role
	// open is true when no tokens are configured: the caller may act as
	// any role.
	open bool
	// run, for an agent run's credential, is what it binds: the caller
	// acts only on its task, as its role, on the routes runs need.
	run *runcred.Claims
}

// mayAct reports whether the caller may send as role.
func (c caller) mayAct(role amp.Role) bool { return c.open || c.role == role }

type callerKey struct{}

func callerOf(r *http.Request) caller {
	c, _ := r.Context().Value(callerKey{}).(caller)
	return c
}

// authenticate resolves the bearer token and, when roles is not empty,
// refuses tokens of any other role.
func (s *Server) authenticate(pattern string, roles []amp.Role, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, ok, err := s.match(r.Header.Get("Authorization"))
		if err != nil {
			w.Header().Set("WWW-Authenticate", `Bearer realm="ampflow"`)
			s.writeError(w, r, task.Errorf(codeUnauthenticated, "%v", err))
			return
		}
		if !ok {
			w.Header().Set("WWW-Authenticate", `Bearer realm="ampflow"`)
			if s.isAgentKey(r.Header.Get("Authorization")) {
				s.writeError(w, r, task.Errorf(codeUnauthenticated, "this route (%s %s) takes an API token; the bearer is a gate agent's key, and agent keys are for %s",
					r.Method, r.URL.Path, s.agentKeyRoutes()))
				return
			}
			s.writeError(w, r, task.Errorf(codeUnauthenticated, "a valid Authorization: Bearer <token> header is required"))
			return
		}
		if len(roles) > 0 && !c.open && !slices.Contains(roles, c.role) {
			s.writeError(w, r, task.Errorf(task.CodeForbidden, "%s %s needs a token of role %s; %q is %s",
				r.Method, r.URL.Path, orRoles(roles), c.name, c.role))
			return
		}
		if c.run != nil {
			if err := s.runMay(pattern, c.run, r); err != nil {
				s.writeError(w, r, err)
				return
			}
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), callerKey{}, c)))
	})
}

// match resolves an Authorization header to its caller: a run's
// credential (checked even when the API is open, so a run never acts as
// the open API's admin by presenting one), an API token, or, with no
// tokens configured, the open API's local admin. An error is a run
// credential that is not taken.
func (s *Server) match(header string) (caller, bool, error) {
	scheme, presented, ok := strings.Cut(header, " ")
	presented = strings.TrimSpace(presented)
	if ok && strings.EqualFold(scheme, "Bearer") && runcred.Is(presented) {
		cl, err := runcred.Verify(s.runKey, presented, s.now())
		if err != nil {
			return caller{}, false, err
		}
		return caller{name: cl.Agent, role: cl.Role, run: &cl}, true, nil
	}
	if len(s.tokens) == 0 {
		return caller{name: s.openName, role: amp.RoleAdmin, open: true}, true, nil
	}
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return caller{}, false, nil
	}
	sum := sha256.Sum256([]byte(presented))
	found := -1
	// Every token is compared, so the time taken does not tell which one
	// (if any) matched.
	for i := range s.tokens {
		if subtle.ConstantTimeCompare(sum[:], s.tokens[i].sum[:]) == 1 && found < 0 {
			found = i
		}
	}
	if found < 0 {
		return caller{}, false, nil
	}
	t := s.tokens[found]
	return caller{name: t.name, id: t.id, role: t.role}, true, nil
}

// orRoles reads "coordinator or admin".
func orRoles(roles []amp.Role) string {
	s := make([]string, len(roles))
	for i, r := range roles {
		s[i] = string(r)
	}
	return strings.Join(s, " or ")
}
