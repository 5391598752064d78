package config

import "testing"

func TestSecretInURL(t *testing.T) {
	for raw, want := range map[string]string{
		"https://hooks.example/amp":                   "",
		"https://hooks.example/amp?agent=codex&v=2":   "",
		"https://hooks.example/amp?token=x":           "the query parameter token",
		"https://hooks.example/amp?X-Amz-Signature=x": "the query parameter X-Amz-Signature",
		"https://hooks.example/amp?access_token=x":    "the query parameter access_token",
		"https://bot:hunter2@hooks.example/amp":       "the password in its user info",
	} {
		if got := SecretInURL(raw); got != want {
			t.Errorf("SecretInURL(%q) = %q, want %q", raw, got, want)
		}
	}
}
