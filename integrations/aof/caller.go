package aof

import (
	"net/http"

	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/task"
	"github.com/ampflow/ampflow/integrations/httpapi"
	wf "github.com/ampflow/ampflow/workflows/aof"
)

// claim is an agent name a request speaks as, and the field that says it.
type claim struct{ field, agent string }

// speaksAs refuses (403, naming the field) an executor or reviewer token
// whose request names another agent than the token's: agents speak only
// as themselves. Admins and coordinators may act for any agent; an API
// without tokens is open, its caller an admin.
func (a *API) speaksAs(w http.ResponseWriter, r *http.Request, claims ...claim) bool {
	c := httpapi.CallerOf(r)
	if c.Open || c.Role == amp.RoleAdmin || c.Role == amp.RoleCoordinator {
		return true
	}
	for _, cl := range claims {
		if cl.agent != c.Name {
			a.refuse(w, r, task.CodeForbidden, []amp.FieldError{{Path: cl.field, Problem: "must be the token's name " + c.Name}},
				"%s: %q is not %s: an agent's token speaks only as that agent", cl.field, cl.agent, c.Name)
			return false
		}
	}
	return true
}

// claims are the agents a valid message speaks as: its sender and, in
// the payload, the status update's agentId or the handoff's fromAgent.
func claims(m wf.Message) []claim {
	out := []claim{{"fromAgent", m.FromAgent}}
	switch {
	case m.Status != nil:
		out = append(out, claim{"payload.agentId", m.Status.AgentID})
	case m.Handoff != nil:
		out = append(out, claim{"payload.fromAgent", m.Handoff.FromAgent})
	}
	return out
}

// agentOf is the agent an executor's or reviewer's token is, which the
// task workflow holds to what is its own (wf.Authorize); "" for an
// admin, a coordinator or an open API, who may act for any agent.
func agentOf(r *http.Request) string {
	c := httpapi.CallerOf(r)
	if c.Open || c.Role == amp.RoleAdmin || c.Role == amp.RoleCoordinator {
		return ""
	}
	return c.Name
}
