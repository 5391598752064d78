package workers

import (
	"encoding/json"
	"log/slog"
	"slices"
	"testing"

	"github.com/ampflow/ampflow/integrations/httpapi"
	"github.com/ampflow/ampflow/workflows/gate"
)

// TestGateDecisionKindsDocumented: the served document's DecisionKind
// enum has the gates' kinds, which GET /v1/decisions lists, even on a
// worker that serves no gate routes.
func TestGateDecisionKindsDocumented(t *testing.T) {
	api := httpapi.New(httpapi.Options{})
	if err := addGate(api, nil, Options{}, &Parts{}, slog.New(slog.DiscardHandler)); err != nil {
		t.Fatal(err)
	}
	b, err := api.OpenAPI()
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Components struct {
			Schemas struct {
				DecisionKind struct {
					Enum []string `json:"enum"`
				} `json:"DecisionKind"`
			} `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	for _, k := range gate.DecisionKinds() {
		if !slices.Contains(doc.Components.Schemas.DecisionKind.Enum, string(k)) {
			t.Errorf("DecisionKind enum %v lacks %s", doc.Components.Schemas.DecisionKind.Enum, k)
		}
	}
}
