package repomesh

import (
	"encoding/json"
	"net/http"
	"slices"

	"github.com/ampflow/ampflow/activities/ssot"
	"github.com/ampflow/ampflow/amp/lease"
	"github.com/ampflow/ampflow/integrations/httpapi"
)

func (a *API) getEvent(w http.ResponseWriter, r *http.Request) {
	if a.unavailable(w, r) {
		return
	}
	e, err := a.visibleEvent(r, r.PathValue("id"))
	if err != nil {
		a.srv.Error(w, r, err)
		return
	}
	httpapi.WriteJSON(w, http.StatusOK, eventOf(e))
}

// viewerNames are the names whose events the caller may read; nil for an
// admin (or an open API), who reads all.
func viewerNames(c httpapi.Caller) []string {
	if isAdmin(c) {
		return nil
	}
	return selfNames(c)
}

// mayRead reports whether one of names sent or posted e, was sent it or
// is mentioned in it, or e went to all or to nobody (a task's own
// events); nil names read everything.
func mayRead(names []string, e ssot.MeshEvent) bool {
	if names == nil || e.To == ssot.Broadcast || e.To == "" {
		return true
	}
	for _, n := range []string{e.From, e.FromID, e.AgentID, e.To} {
		if n != "" && slices.Contains(names, n) {
			return true
		}
	}
	var p struct {
		Mentions []string `json:"mentions"`
	}
	_ = json.Unmarshal(e.Payload, &p)
	return slices.ContainsFunc(p.Mentions, func(m string) bool { return slices.Contains(names, m) })
}

// visibleEvent reads the event id, not found unless the caller may read
// it: another agent's private message does not exist for it.
func (a *API) visibleEvent(r *http.Request, id string) (ssot.MeshEvent, error) {
	e, err := a.store.Event(r.Context(), id)
	if err == nil && !mayRead(viewerNames(httpapi.CallerOf(r)), e) {
		err = ssot.ErrNotFound
	}
	if err != nil {
		return ssot.MeshEvent{}, storeError(err, "event "+id)
	}
	return e, nil
}

func (a *API) thread(w http.ResponseWriter, r *http.Request) {
	if a.unavailable(w, r) {
		return
	}
	if _, err := a.visibleEvent(r, r.PathValue("id")); err != nil {
		a.srv.Error(w, r, err)
		return
	}
	evs, err := a.store.Thread(r.Context(), r.PathValue("id"))
	if err != nil {
		a.srv.Error(w, r, storeError(err, "event "+r.PathValue("id")))
		return
	}
	names := viewerNames(httpapi.CallerOf(r))
	evs = slices.DeleteFunc(evs, func(e ssot.MeshEvent) bool { return !mayRead(names, e) })
	httpapi.WriteJSON(w, http.StatusOK, eventsOf(evs, ""))
}

func (a *API) markRead(w http.ResponseWriter, r *http.Request) {
	if a.unavailable(w, r) {
		return
	}
	var in ReadRequest
	if r.ContentLength != 0 { // the guard wants a JSON body; {} reads as the caller
		if err := a.srv.Decode(w, r, &in); err != nil {
			a.srv.Error(w, r, err)
			return
		}
	}
	c := httpapi.CallerOf(r)
	if in.AgentID == "" {
		in.AgentID = c.Name
	}
	if err := lease.CheckAgent(in.AgentID); err != nil {
		a.srv.Error(w, r, httpapi.InvalidField("agent_id", trimField(err)))
		return
	}
	if !mayActAs(c, in.AgentID) {
		a.denied(w, r, "event.read", in.AgentID)
		return
	}
	if _, err := a.visibleEvent(r, r.PathValue("id")); err != nil {
		a.srv.Error(w, r, err)
		return
	}
	e, err := a.store.MarkRead(r.Context(), r.PathValue("id"), in.AgentID, a.now())
	if err != nil {
		a.srv.Error(w, r, storeError(err, "event "+r.PathValue("id")))
		return
	}
	httpapi.WriteJSON(w, http.StatusOK, eventOf(e))
}
