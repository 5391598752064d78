package httpapi

import (
	"net/http"

	"github.com/ampflow/ampflow/amp"
)

// WhoAmI is GET /v1/whoami: who the caller's token says it is, so an
// agent learns its name (its inbox, its AOF work, its mesh id) from its
// token alone.
type WhoAmI struct {
	Name string   `json:"name"`
	ID   string   `json:"id,omitempty"`
	Role amp.Role `json:"role"`
	// Open is true when the API has no tokens: every caller is an admin
	// under the local name.
	Open bool `json:"open"`
}

func (s *Server) whoami(w http.ResponseWriter, r *http.Request) {
	c := callerOf(r)
	writeJSON(w, http.StatusOK, WhoAmI{Name: c.name, ID: c.id, Role: c.role, Open: c.open})
}
