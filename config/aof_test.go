package config

import (
	"strings"
	"testing"
)

func TestValidateAOF(t *testing.T) {
	for review, want := range map[string]string{"admin": "", "agent": "aof.review: agent review", "robot": "aof.review: must be admin"} {
		c := Default()
		c.AOF.Review = review
		err := c.Validate()
		switch {
		case want == "" && err != nil:
			t.Errorf("%s: %v", review, err)
		case want != "" && (err == nil || !strings.Contains(err.Error(), want)):
			t.Errorf("%s: %v, want %q", review, err, want)
		}
	}
}
