package github

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"
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

// fakeAPI serves check runs and statuses of one commit, two pages each.
func fakeAPI(t *testing.T, sha string) *httptest.Server {
	t.Helper()
	mux := http.NewServeMux()
	page := func(r *http.Request) int {
		p, _ := strconv.Atoi(r.URL.Query().Get("page"))
		return max(p, 1)
	}
	next := func(w http.ResponseWriter, r *http.Request, n int) {
		u := *r.URL
		q := u.Query()
		q.Set("page", strconv.Itoa(n))
		u.RawQuery = q.Encode()
		w.Header().Set("Link", fmt.Sprintf(`<http://%s%s>; rel="next"`, r.Host, u.RequestURI()))
	}
	mux.HandleFunc("/api/v3/repos/acme/widget/commits/"+sha+"/check-runs", func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer tok" {
			t.Errorf("Authorization = %q", r.Header.Get("Authorization"))
		}
		if page(r) == 1 {
			next(w, r, 2)
			fmt.Fprint(w, `{"total_count":3,"check_runs":[{"name":"build","status":"completed","conclusion":"success"},{"name":"lint","status":"completed","conclusion":"neutral"}]}`)
			return
		}
		fmt.Fprint(w, `{"total_count":3,"check_runs":[{"name":"test","status":"completed","conclusion":"timed_out"}]}`)
	})
	mux.HandleFunc("/api/v3/repos/acme/widget/commits/"+sha+"/status", func(w http.ResponseWriter, r *http.Request) {
		if page(r) == 1 {
			next(w, r, 2)
			fmt.Fprint(w, `{"state":"pending","statuses":[{"context":"ci/jenkins","state":"success"}]}`)
			return
		}
		fmt.Fprint(w, `{"state":"pending","statuses":[{"context":"deploy/preview","state":"pending"}]}`)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

func TestCommitChecksPaginates(t *testing.T) {
	srv := fakeAPI(t, "abc123")
	c, err := New(Options{Token: "tok", BaseURL: srv.URL})
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
				srv := httptest.NewServer(tc.handler)
				t.Cleanup(srv.Close)
				opts.BaseURL = srv.URL
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
