package amp

import (
	"regexp"
	"strings"
)

// repoPattern is what a plan's repo may be: an absolute path of a local
// repository, or the URL of one in a scheme git fetches from without a
// helper program of the repository's choosing (file, http(s), ssh, git,
// and ssh's user@host:path form).
const repoPattern = `^(/|[A-Za-z]:[\\/]|(file|https?|ssh|git)://[^\s]+$|[A-Za-z0-9._-]+@[A-Za-z0-9.-]+:[^\s]+$)`

var repoRE = regexp.MustCompile(repoPattern)

// repoWhat says what a repo must be, in the checker's "must be …".
const repoWhat = "an absolute path or a repository URL (file://, https://, http://, ssh://, git://, or user@host:path)"

// ValidRepo reports whether repo is an absolute path or a URL of a
// scheme ampflow fetches.
func ValidRepo(repo string) bool { return repoRE.MatchString(repo) }

// RepoIsURL reports whether repo names a remote repository, one each
// worker keeps a mirror of, rather than a local path.
func RepoIsURL(repo string) bool {
	if strings.HasPrefix(repo, "/") {
		return false
	}
	if strings.Contains(repo, "://") {
		return true
	}
	at, colon := strings.Index(repo, "@"), strings.Index(repo, ":")
	return at > 0 && colon > at && !strings.Contains(repo[:colon], "/")
}
