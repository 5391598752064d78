package amp

import (
	"errors"
	"testing"
	"time"
)

func TestWrapAgent(t *testing.T) {
	at := time.Date(2026, 2, 26, 14, 0, 0, 0, time.UTC)
	verdict := []byte(`{"decision":"approved","criteria_results":[{"criterion":"c","passed":true,"evidence":"e"}],"confidence":0.9}`)
	escalation := []byte(`{"escalation_type":"unknown","severity":"warning","triggered_by":"executor","description":"d",
		"affected_msgs":[],"system_state_snapshot":{},"auto_suspended":false}`)
	for _, tc := range []struct {
		name     string
		raw      []byte
		typ      Type
		from     Role
		wantFrom Role
		field    string
	}{
		{"Verdict", verdict, TypeReviewVerdict, "", RoleReviewer, ""},
		{"Escalation", escalation, TypeEscalation, RoleExecutor, RoleExecutor, ""},
		{"EscalationNoFrom", escalation, TypeEscalation, "", "", "from"},
		{"FromOnVerdict", verdict, TypeReviewVerdict, RoleReviewer, "", "from"},
		{"NotAnAgentType", verdict, TypeReviewRequest, "", "", "type"},
		{"BadPayload", []byte(`{"decision":"maybe"}`), TypeReviewVerdict, "", "", "payload.decision"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := WrapAgent(tc.raw, tc.typ, "T-2026-045", tc.from, at)
			if tc.field == "" {
				if err != nil {
					t.Fatal(err)
				}
				_, to := Route(tc.typ)
				if m.From != tc.wantFrom || m.To != to || m.MsgID != MsgID(tc.typ, "T-2026-045", at) {
					t.Errorf("envelope %+v", m)
				}
				return
			}
			var ve *ValidationError
			if !errors.As(err, &ve) {
				t.Fatalf("error %v, want a ValidationError naming %s", err, tc.field)
			}
			for _, f := range ve.Fields {
				if f.Path == tc.field {
					return
				}
			}
			t.Errorf("error %v does not name %s", err, tc.field)
		})
	}
}
