package repomesh

import (
	"context"
	"errors"
	"slices"

	"github.com/ampflow/ampflow/activities"
	"github.com/ampflow/ampflow/activities/ssot"
	"github.com/ampflow/ampflow/amp"
)

// An agent's tasks: the tasks of ampflow's whose dispatch or review
// request it acknowledged through the API (the task.delivered records,
// activities.DeliveredEvent), and a task known only in the mesh that it
// claimed itself (a task.claimed event of its own). A recovered agent's
// heartbeat sends again only the former; a test.result with failures
// files bug tasks only from either (or a coordinator or admin).

// maxDeliveries bounds the delivery records read for one agent or task.
const maxDeliveries = MaxEventLimit

// deliveredTasks are the tasks of ampflow's that one of names
// acknowledged as role, newest first, each once.
func (a *API) deliveredTasks(ctx context.Context, names []string, role amp.Role) ([]string, error) {
	var ids []string
	for _, name := range names {
		evs, _, err := a.store.SearchEvents(ctx, ssot.SearchQuery{Type: activities.TypeTaskDelivered, From: name}, ssot.Page{Limit: maxDeliveries})
		if err != nil {
			return nil, storeError(err, "deliveries")
		}
		for _, e := range evs {
			if agent, r, ok := activities.DeliveryOf(e); ok && agent == name && r == role && !slices.Contains(ids, e.TaskID) {
				ids = append(ids, e.TaskID)
			}
		}
	}
	return ids, nil
}

// isTaskAgent reports whether one of names is an agent of taskID: it
// acknowledged the task's dispatch or review request, or, for a task
// ampflow does not know (one of the mesh's own), claimed it.
func (a *API) isTaskAgent(ctx context.Context, names []string, taskID string) (bool, error) {
	_, err := a.store.Task(ctx, taskID)
	known := err == nil
	if err != nil && !errors.Is(err, ssot.ErrNotFound) {
		return false, storeError(err, "task "+taskID)
	}
	delivered, _, err := a.store.SearchEvents(ctx, ssot.SearchQuery{Type: activities.TypeTaskDelivered, TaskID: taskID}, ssot.Page{Limit: maxDeliveries})
	if err != nil {
		return false, storeError(err, "deliveries")
	}
	for _, e := range delivered {
		if agent, _, ok := activities.DeliveryOf(e); ok && slices.Contains(names, agent) {
			return true, nil
		}
	}
	if known {
		return false, nil
	}
	claims, _, err := a.store.SearchEvents(ctx, ssot.SearchQuery{Type: activities.TypeTaskClaimed, TaskID: taskID}, ssot.Page{Limit: maxDeliveries})
	if err != nil {
		return false, storeError(err, "claims")
	}
	return slices.ContainsFunc(claims, func(e ssot.MeshEvent) bool { return e.AgentID != Sender && slices.Contains(names, e.From) }), nil
}
