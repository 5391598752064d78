package config

import (
	"strings"
	"testing"
	"time"
)

func TestIntakeGitHub(t *testing.T) {
	load := func(env map[string]string) (Config, error) {
		return LoadEnv(New(), "", func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	}
	c, err := load(map[string]string{
		"AMPFLOW_INTAKE_GITHUB_REPOS":         `[{"name":"acme/widget","repo":"/srv/widget"}]`,
		"AMPFLOW_INTAKE_GITHUB_POLL_INTERVAL": "5s",
	})
	if err != nil {
		t.Fatal(err)
	}
	g := c.Intake.GitHub
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if !g.On() || g.Repos[0].Repo != "/srv/widget" || g.PollInterval != 5*time.Second || g.Label != "ampflow" ||
		g.TokenEnv != "GITHUB_TOKEN" || g.Risk != "low" || !g.CloseOnMerge {
		t.Errorf("intake.github = %+v", g)
	}
	if off, err := load(nil); err != nil || off.Intake.GitHub.On() {
		t.Errorf("no repos: on %v, %v", off.Intake.GitHub.On(), err)
	}
	for name, tc := range map[string]struct {
		env  map[string]string
		want string
	}{
		"Name":      {map[string]string{"AMPFLOW_INTAKE_GITHUB_REPOS": `[{"name":"widget","repo":"/srv/widget"}]`}, "intake.github.repos[0].name"},
		"Twice":     {map[string]string{"AMPFLOW_INTAKE_GITHUB_REPOS": `[{"name":"a/b","repo":"/x"},{"name":"A/B","repo":"/y"}]`}, "intake.github.repos[1].name"},
		"Relative":  {map[string]string{"AMPFLOW_INTAKE_GITHUB_REPOS": `[{"name":"a/b","repo":"srv/widget"}]`}, "intake.github.repos[0].repo"},
		"NoPicker":  {map[string]string{"AMPFLOW_INTAKE_GITHUB_REPOS": `[{"name":"a/b","repo":"/x"}]`, "AMPFLOW_INTAKE_GITHUB_LABEL": ""}, "intake.github.label"},
		"Risk":      {map[string]string{"AMPFLOW_INTAKE_GITHUB_REPOS": `[{"name":"a/b","repo":"/x"}]`, "AMPFLOW_INTAKE_GITHUB_RISK": "huge"}, "intake.github.risk"},
		"SecretEnv": {map[string]string{"AMPFLOW_INTAKE_GITHUB_REPOS": `[{"name":"a/b","repo":"/x"}]`, "AMPFLOW_INTAKE_GITHUB_WEBHOOK_SECRET_ENV": "not a name"}, "intake.github.webhook_secret_env"},
	} {
		t.Run(name, func(t *testing.T) {
			c, err := load(tc.env)
			if err == nil {
				err = c.Validate()
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one naming %s", err, tc.want)
			}
		})
	}
}
