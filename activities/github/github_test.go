package github

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ampflow/ampflow/activities/github/githubtest"
)

func TestParseRemote(t *testing.T) {
	tests := []struct {
		remote string
		want   string // host/owner/name, "" for not GitHub
	}{
		{"https://github.com/acme/widget.git", "github.com/acme/widget"},
		{"https://github.com/acme/widget", "github.com/acme/widget"},
		{"https://github.com/acme/widget/", "github.com/acme/widget"},
		{"https://user:tok@github.com/acme/widget.git", "github.com/acme/widget"},
		{"git@github.com:acme/widget.git", "github.com/acme/widget"},
		{"git@github.com:acme/widget", "github.com/acme/widget"},
		{"ssh://git@github.com/acme/widget.git", "github.com/acme/widget"},
		{"ssh://git@ssh.github.com:443/acme/widget.git", "ssh.github.com/acme/widget"},
		{"git@ghe.example.com:acme/widget.git", "ghe.example.com/acme/widget"},
		{"git@gitlab.com:acme/widget.git", ""},
		{"/srv/git/widget.git", ""},
		{"file:///srv/git/widget.git", ""},
		{"https://github.com/acme", ""},
		{"https://github.com/acme/widget/extra", ""},
	}
	for _, tc := range tests {
		r, ok := ParseRemote(tc.remote, "ghe.example.com")
		got := ""
		if ok {
			got = r.Host + "/" + r.Owner + "/" + r.Name
		}
		if got != tc.want {
			t.Errorf("ParseRemote(%q) = %q, want %q", tc.remote, got, tc.want)
		}
	}
	if got := (Repo{Host: "github.com", Owner: "o", Name: "r"}).CompareURL("main", "feature/x y"); got != "https://github.com/o/r/compare/main...feature/x%20y" {
		t.Errorf("CompareURL = %q", got)
	}
}

// checksOnPages is a fake GitHub whose abc123 of acme/widget has three
// check runs and two statuses, answered a page each.
func checksOnPages(t *testing.T) *githubtest.Server {
	gh := githubtest.New(t, githubtest.Options{Token: "tok", PageSize: 1})
	for _, r := range [][2]string{{"build", "success"}, {"lint", "neutral"}, {"test", "timed_out"}} {
		gh.AddCheckRun("acme", "widget", "abc123", r[0], r[1], githubtest.CheckOutput{}, nil, nil, "")
	}
	gh.AddStatus("acme", "widget", "abc123", "ci/jenkins", "success")
	gh.AddStatus("acme", "widget", "abc123", "deploy/preview", "pending")
	return gh
}

func TestCommitChecksPaginates(t *testing.T) {
	gh := checksOnPages(t)
	c, err := New(Options{Token: "tok", BaseURL: gh.URL})
	if err != nil {
		t.Fatal(err)
	}
	checks, err := c.CommitChecks(context.Background(), "acme", "widget", "abc123")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, ck := range checks {
		got = append(got, ck.Source+":"+ck.Name+"="+string(ck.Outcome))
	}
	want := "check_run:build=passed check_run:lint=passed check_run:test=failed status:ci/jenkins=passed status:deploy/preview=pending"
	if strings.Join(got, " ") != want {
		t.Errorf("checks:\n%s\nwant:\n%s", strings.Join(got, " "), want)
	}
	if n := len(gh.Requests()); n != 5 {
		t.Errorf("%d requests, want 5: a page for each check run and each status", n)
	}
}

func TestCommitChecksErrors(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	reset := now.Add(2 * time.Minute)
	tests := []struct {
		name    string
		token   string
		handler http.HandlerFunc
		check   func(t *testing.T, err error)
	}{
		{"NoToken", "", nil, func(t *testing.T, err error) {
			if !errors.Is(err, ErrNoToken) {
				t.Errorf("err = %v, want ErrNoToken", err)
			}
		}},
		{"NotFound", "tok", func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, `{"message":"Not Found"}`, http.StatusNotFound)
		}, func(t *testing.T, err error) {
			if !errors.Is(err, ErrNotFound) {
				t.Errorf("err = %v, want ErrNotFound", err)
			}
		}},
		{"PrimaryRateLimit", "tok", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("X-RateLimit-Remaining", "0")
			w.Header().Set("X-RateLimit-Reset", strconv.FormatInt(reset.Unix(), 10))
			http.Error(w, `{"message":"API rate limit exceeded"}`, http.StatusForbidden)
		}, func(t *testing.T, err error) {
			var rl *RateLimitedError
			if !errors.As(err, &rl) || !rl.RetryAt.Equal(reset) {
				t.Errorf("err = %v, want a rate limit until %v", err, reset)
			}
		}},
		{"TooManyRequests", "tok", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Retry-After", "30")
			http.Error(w, `{"message":"slow down"}`, http.StatusTooManyRequests)
		}, func(t *testing.T, err error) {
			var rl *RateLimitedError
			if !errors.As(err, &rl) || !rl.RetryAt.Equal(now.Add(30*time.Second)) {
				t.Errorf("err = %v, want a rate limit 30s from now", err)
			}
		}},
		{"ServerError", "tok", func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, `{"message":"boom"}`, http.StatusBadGateway)
		}, func(t *testing.T, err error) {
			var rl *RateLimitedError
			if err == nil || errors.Is(err, ErrNotFound) || errors.As(err, &rl) {
				t.Errorf("err = %v, want a plain (transient) error", err)
			}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			opts := Options{Token: tc.token, Now: func() time.Time { return now }}
			if tc.handler != nil {
				gh := githubtest.New(t, githubtest.Options{})
				gh.SetHook(func(w http.ResponseWriter, r *http.Request) bool {
					tc.handler(w, r)
					return true
				})
				opts.BaseURL = gh.URL
			}
			c, err := New(opts)
			if err != nil {
				t.Fatal(err)
			}
			_, err = c.CommitChecks(context.Background(), "acme", "widget", "abc123")
			tc.check(t, err)
		})
	}
}

func TestConfiguredRepo(t *testing.T) {
	tests := []struct {
		name, ownerName, apiURL string
		want                    string // FullName; empty for an error
	}{
		{"Public", "acme/widget", "", "github.com/acme/widget"},
		{"PublicAPI", "acme/widget", "https://api.github.com/", "github.com/acme/widget"},
		{"Enterprise", "acme/widget", "https://ghe.example.com/api/v3/", "ghe.example.com/acme/widget"},
		{"NoName", "acme", "", ""},
		{"URL", "https://github.com/acme/widget", "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, err := ConfiguredRepo(tc.ownerName, tc.apiURL)
			if tc.want == "" {
				if err == nil {
					t.Errorf("got %v, want an error", r)
				}
				return
			}
			if err != nil || r.FullName() != tc.want {
				t.Fatalf("got %q, %v; want %q", r.FullName(), err, tc.want)
			}
			if back, ok := ParseFullName(r.FullName()); !ok || back != r {
				t.Errorf("ParseFullName(%q) = %v, %v; want %v", r.FullName(), back, ok, r)
			}
		})
	}
}
