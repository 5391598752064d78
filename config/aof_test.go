package config

import (
	"strings"
	"testing"
)

func TestValidateAOF(t *testing.T) {
	for _, tc := range []struct {
		name                 string
		review, repo, branch string
		want                 []string // problems, each "key: text"
	}{
		{"admin", "admin", "", "", nil},
		{"agent", "agent", "/src/app", "aof/work", nil},
		{"unknown", "robot", "", "", []string{`aof.review: must be admin or agent, not "robot"`}},
		{"agentBare", "agent", "", "", []string{"aof.repo: required when aof.review is agent", "aof.branch: required when aof.review is agent"}},
		{"agentRelative", "agent", "src/app", "main", []string{`aof.repo: must be an absolute path, not "src/app"`, "aof.branch: must be a feature branch, not main"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := Default()
			c.AOF.Review, c.AOF.Repo, c.AOF.Branch = tc.review, tc.repo, tc.branch
			err := c.Validate()
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil {
				t.Fatalf("no error, want %q", tc.want)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%v\nmissing %q", err, w)
				}
			}
		})
	}
}
