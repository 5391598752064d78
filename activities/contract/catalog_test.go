package contract

import (
	"slices"
	"strings"
	"testing"
)

func TestDefaultCatalog(t *testing.T) {
	c := Default()
	for _, name := range []string{"git.push", "git.force_push", "github.pulls.merge", "github.releases.create",
		"npm.publish", "deploy.production", "db.migrate", "fs.delete_recursive", "slack.send_message", "http.request"} {
		if _, ok := c.Lookup(name); !ok {
			t.Errorf("the default catalog has no %s", name)
		}
	}
}

func TestScore(t *testing.T) {
	c := Default()
	tests := []struct {
		primitive string
		score     int
		level     string
		handling  Handling
		reasoning []string
	}{
		{"fs.delete_recursive", 165, "critical", HandlingHumanRequired, []string{"blastRadiusUnbounded", "destructiveAction", "irreversibleWrite", "compound:destructive+irreversible", "multiplier:blastRadius(1.5x)"}},
		{"git.push", 15, "low", HandlingLog, []string{"externalCommunication"}},
		{"slack.send_message", 30, "moderate", HandlingConfirm, []string{"externalCommunication", "publicVisibility"}},
		{"github.pulls.merge", 60, "high", HandlingStrictConfirm, []string{"irreversibleWrite", "productionImpact"}},
		{"git.force_push", 105, "critical", HandlingHumanRequired, []string{"destructiveAction", "externalCommunication", "irreversibleWrite", "compound:destructive+irreversible"}},
		{"deploy.production", 210, "severe", HandlingHumanRequired, nil},
	}
	for _, tt := range tests {
		t.Run(tt.primitive, func(t *testing.T) {
			p, _ := c.Lookup(tt.primitive)
			score, risk := c.RiskOf(p, nil, "")
			if score != tt.score || risk.Level != tt.level || risk.MinimumHandling != tt.handling {
				t.Errorf("score %d %s %s; want %d %s %s", score, risk.Level, risk.MinimumHandling, tt.score, tt.level, tt.handling)
			}
			if tt.reasoning != nil && !slices.Equal(risk.Reasoning, tt.reasoning) {
				t.Errorf("reasoning %q; want %q", risk.Reasoning, tt.reasoning)
			}
			if risk.OverridePolicy != "escalation_only" {
				t.Errorf("override policy %q", risk.OverridePolicy)
			}
		})
	}
}

func TestScoreCapped(t *testing.T) {
	c := Default()
	p := Primitive{Name: "x.y", Signals: map[string]bool{}}
	for sig := range c.Scoring.Weights {
		p.Signals[sig] = true
	}
	if score, _ := c.Score(p); score != MaxScore {
		t.Errorf("every signal scores %d; want the cap %d", score, MaxScore)
	}
}

// Overrides only escalate: a caller asking for less than the floor, or an
// escalation rule below it, leaves it; a stricter one raises it.
func TestEscalationOnly(t *testing.T) {
	c := Default()
	push, _ := c.Lookup("git.force_push")
	if _, r := c.RiskOf(push, nil, HandlingAllow); r.MinimumHandling != HandlingHumanRequired {
		t.Errorf("a caller asking for allow lowered human_required to %s", r.MinimumHandling)
	}
	plain, _ := c.Lookup("git.push")
	_, r := c.RiskOf(plain, nil, HandlingStrictConfirm)
	if r.MinimumHandling != HandlingStrictConfirm || !slices.Contains(r.Reasoning, "escalation:caller(strict_confirm)") {
		t.Errorf("a caller asking for strict_confirm: %s %q", r.MinimumHandling, r.Reasoning)
	}
	mig, _ := c.Lookup("db.migrate")
	if _, r := c.RiskOf(mig, map[string]any{"environment": "staging"}, ""); r.MinimumHandling != HandlingStrictConfirm {
		t.Errorf("staging migration: %s; want strict_confirm", r.MinimumHandling)
	}
	if _, r := c.RiskOf(mig, map[string]any{"environment": "production"}, ""); r.MinimumHandling != HandlingHumanRequired {
		t.Errorf("production migration: %s; want human_required by the rule", r.MinimumHandling)
	}
	for _, env := range []string{"Production", " production\t", "PRODUCTION", "ｐｒｏｄｕｃｔｉｏｎ", "pro\u200bduction"} {
		if _, r := c.RiskOf(mig, map[string]any{"environment": env}, ""); r.MinimumHandling != HandlingHumanRequired {
			t.Errorf("migration to %q: %s; want human_required by the rule, compared normalised", env, r.MinimumHandling)
		}
	}
	low := *c
	low.Escalations = []Escalation{{Primitive: "git.*", MinimumHandling: HandlingAllow}}
	if _, r := low.RiskOf(push, nil, ""); r.MinimumHandling != HandlingHumanRequired {
		t.Errorf("a rule of allow lowered git.force_push to %s", r.MinimumHandling)
	}
}

func TestCatalogValidation(t *testing.T) {
	base := string(DefaultCatalogYAML())
	tests := []struct {
		name, from, to, want string
	}{
		{"UnknownSignal", "signals: {externalCommunication: true}\n", "signals: {externalCommunication: true, moonLanding: true}\n", "primitives[0].signals.moonLanding: unknown signal"},
		{"BadMethod", "method: PUT", "method: FETCH", "primitives[2].blueprint.method: must be one of"},
		{"Placeholder", "{remote}", "{remotes}", "primitives[0].blueprint.command[2]: {remotes} names no parameter"},
		{"LevelsDescend", "{level: severe, min: 180, minimumHandling: human_required}", "{level: severe, min: 180, minimumHandling: confirm}", "scoring.levels[5].minimumHandling: must not be lower"},
		{"LevelOrder", "min: 180", "min: 90", "scoring.levels[5].min: must be more than"},
		{"UnknownKey", "clarify_ratio: 0.75", "clarify_ratio: 0.75\n  fuzzy: true", "field fuzzy not found in resolution"},
		{"UnknownBlueprintKey", "contentType: application/json\n      auth: {type: Bearer, header: Authorization, scopes: [repo]}", "contentType: application/json\n      timeout: 5s\n      auth: {type: Bearer, header: Authorization, scopes: [repo]}", "field timeout not found in primitives[].blueprint"},
		{"WrongType", "min: 30,", "min: thirty,", "cannot unmarshal !!str `thirty` into int"},
		{"Ratio", "clarify_ratio: 0.75", "clarify_ratio: 2", "resolution.clarify_ratio: must be more than 0"},
		{"DuplicateName", "name: git.force_push", "name: git.push", "primitives[1].name: \"git.push\" is primitives[0]'s name already"},
		{"ParamIn", "{name: path, in: arg", "{name: path, in: disk", "primitives[7].parameters[0].in: must be one of"},
		{"Escalation", "primitive: db.migrate\n", "primitive: db.migrations\n", "escalations[0].primitive: names no primitive"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if !strings.Contains(base, tt.from) {
				t.Fatalf("the default catalog has no %q", tt.from)
			}
			_, err := Parse([]byte(strings.Replace(base, tt.from, tt.to, 1)), "test.yaml")
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v; want one containing %q", err, tt.want)
			}
			if !strings.HasPrefix(err.Error(), "primitive catalog test.yaml: ") {
				t.Errorf("error %q does not name the file", err)
			}
		})
	}
}
