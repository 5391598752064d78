// Package github reads what ampflow needs from GitHub: the check runs and
// commit statuses of a commit, and where a repository lives. It wraps
// go-github and knows nothing of Temporal or of ampflow's activities.
package github

import (
	"fmt"
	"net/url"
	"strings"
)

// Repo is a repository on a GitHub host.
type Repo struct {
	Host  string // github.com or an Enterprise host
	Owner string
	Name  string
}

// String returns OWNER/NAME.
func (r Repo) String() string { return r.Owner + "/" + r.Name }

// CompareURL is the web page comparing base with head (three dots: the
// changes on head since it left base).
func (r Repo) CompareURL(base, head string) string {
	return fmt.Sprintf("https://%s/%s/%s/compare/%s...%s", r.Host, r.Owner, r.Name, escapeRef(base), escapeRef(head))
}

// escapeRef escapes a ref for a URL path while keeping its slashes, as
// GitHub writes compare URLs of branches such as feature/x.
func escapeRef(ref string) string {
	parts := strings.Split(ref, "/")
	for i, p := range parts {
		parts[i] = url.PathEscape(p)
	}
	return strings.Join(parts, "/")
}

// ParseRemote reads a git remote URL in any of GitHub's forms (https,
// ssh://, scp-like git@host:owner/repo, git://; with or without .git or a
// trailing slash). It reports false for hosts other than github.com and
// the given extra hosts.
func ParseRemote(remote string, hosts ...string) (Repo, bool) {
	remote = strings.TrimSpace(remote)
	var host, p string
	if u, err := url.Parse(remote); err == nil && u.Scheme != "" && u.Host != "" {
		switch u.Scheme {
		case "https", "http", "ssh", "git", "git+ssh", "ssh+git":
		default:
			return Repo{}, false
		}
		host, p = u.Hostname(), u.Path
	} else {
		// scp-like syntax: [user@]host:path, where host has no slash.
		at := strings.LastIndex(remote, "@")
		rest := remote[at+1:]
		h, path, ok := strings.Cut(rest, ":")
		if !ok || h == "" || strings.Contains(h, "/") {
			return Repo{}, false
		}
		host, p = h, path
	}
	host = strings.ToLower(host)
	if !knownHost(host, hosts) {
		return Repo{}, false
	}
	p = strings.Trim(p, "/")
	p = strings.TrimSuffix(p, ".git")
	owner, name, ok := strings.Cut(p, "/")
	if !ok || owner == "" || name == "" || strings.Contains(name, "/") {
		return Repo{}, false
	}
	return Repo{Host: host, Owner: owner, Name: name}, true
}

func knownHost(host string, extra []string) bool {
	if host == "github.com" || host == "www.github.com" || host == "ssh.github.com" {
		return true
	}
	for _, h := range extra {
		if strings.EqualFold(strings.TrimSpace(h), host) {
			return true
		}
	}
	return false
}

// FullName returns HOST/OWNER/NAME, the form ParseFullName reads.
func (r Repo) FullName() string { return r.Host + "/" + r.Owner + "/" + r.Name }

// ParseFullName reads HOST/OWNER/NAME, as FullName writes it.
func ParseFullName(s string) (Repo, bool) {
	parts := strings.Split(strings.TrimSpace(s), "/")
	if len(parts) != 3 || parts[0] == "" || parts[1] == "" || parts[2] == "" {
		return Repo{}, false
	}
	return Repo{Host: strings.ToLower(parts[0]), Owner: parts[1], Name: parts[2]}, true
}

// ConfiguredRepo is OWNER/NAME on the web host of the API at apiURL:
// github.com for the public API (an empty apiURL), else the API's host
// (GitHub Enterprise).
func ConfiguredRepo(ownerName, apiURL string) (Repo, error) {
	owner, name, ok := strings.Cut(strings.TrimSpace(ownerName), "/")
	if !ok || owner == "" || name == "" || strings.Contains(name, "/") {
		return Repo{}, fmt.Errorf("repository %q is not OWNER/NAME", ownerName)
	}
	host := "github.com"
	if apiURL != "" {
		u, err := url.Parse(apiURL)
		if err != nil || u.Hostname() == "" {
			return Repo{}, fmt.Errorf("API URL %q has no host", apiURL)
		}
		if h := strings.ToLower(u.Hostname()); h != "api.github.com" {
			host = h
		}
	}
	return Repo{Host: host, Owner: owner, Name: name}, nil
}
