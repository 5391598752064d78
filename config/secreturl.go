package config

import (
	"net/url"
	"strings"
)

// secretWords mark a URL query parameter that carries a credential.
var secretWords = []string{"token", "secret", "key", "sig", "pass", "auth", "credential", "session"}

// SecretInURL names what in the URL raw carries a credential: a password
// in its user info, or a query parameter named like one ("token",
// "api_key", "sig", …); "" when nothing does. Such a URL would be
// stored, logged and shown wherever the URL is: a webhook's secret
// belongs in its signature (webhook_secret), not its address.
func SecretInURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	if u.User != nil {
		if _, ok := u.User.Password(); ok {
			return "the password in its user info"
		}
	}
	for name := range u.Query() {
		n := strings.ToLower(name)
		for _, w := range secretWords {
			if strings.Contains(n, w) {
				return "the query parameter " + name
			}
		}
	}
	return ""
}
