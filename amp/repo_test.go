package amp

import "testing"

func TestRepo(t *testing.T) {
	for _, tc := range []struct {
		repo       string
		valid, url bool
	}{
		{"/srv/git/app", true, false},
		{"/srv/a://b", true, false},
		{"C:\\src\\app", true, false},
		{"file:///srv/git/app.git", true, true},
		{"https://github.com/acme/app.git", true, true},
		{"ssh://git@host:22/acme/app.git", true, true},
		{"git@github.com:acme/app.git", true, true},
		{"ftp://host/app.git", false, true},
		{"ext::sh -c evil", false, false},
		{"src/app", false, false},
		{"https://host/a b", false, true},
	} {
		if got := ValidRepo(tc.repo); got != tc.valid {
			t.Errorf("ValidRepo(%q) = %v, want %v", tc.repo, got, tc.valid)
		}
		if got := RepoIsURL(tc.repo); got != tc.url {
			t.Errorf("RepoIsURL(%q) = %v, want %v", tc.repo, got, tc.url)
		}
	}
}
