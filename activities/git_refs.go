package activities

import (
	"context"
	"fmt"
	"strings"

	"go.temporal.io/sdk/temporal"
)

// refSet is what a check has read of a repository's branches: the commit
// of each ref it asked about that exists and points to a commit. Refs are
// asked for by name, in one git cat-file --batch-check, so a check costs
// the same however many branches the repository has (a listing of every
// branch grew with them: 20 ms a process at 1,000 loose branch refs).
type refSet struct {
	commits map[string]string // full ref name → commit hash
	asked   map[string]bool   // full ref names read, existing or not
}

// readRefs reads, in one git process, the local and origin's refs of
// branches, of main and master, and origin/HEAD.
func (g *Git) readRefs(ctx context.Context, repo string, branches ...string) (refSet, error) {
	s := refSet{commits: map[string]string{}, asked: map[string]bool{}}
	return s, g.ask(ctx, repo, &s, append([]string{"main", "master"}, branches...)...)
}

// ask reads the local and origin's refs of those branches s has not read
// yet, through the repository's batch (git_batch.go) or else one git
// process; nothing when there are none. A name git would refuse is read
// as a branch that does not exist.
func (g *Git) ask(ctx context.Context, repo string, s *refSet, branches ...string) error {
	var names []string
	add := func(ref string) {
		if !s.asked[ref] {
			s.asked[ref] = true
			if plainRefName(ref) {
				names = append(names, ref)
			}
		}
	}
	add(originHEAD)
	for _, b := range branches {
		if b = normalizeBranch(b); b != "" {
			add("refs/heads/" + b)
			add("refs/remotes/origin/" + b)
		}
	}
	if len(names) == 0 {
		return nil
	}
	lines, err := g.batchInfo(ctx, repo, names)
	if err != nil {
		out, err := runGit(ctx, g.bin(), repo, false, strings.Join(names, "\n")+"\n",
			"cat-file", "--batch-check=%(objectname) %(objecttype)")
		if err != nil {
			return fmt.Errorf("reading the branches of %s: %w", repo, err)
		}
		lines = strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	}
	if len(lines) != len(names) {
		return fmt.Errorf("reading the branches of %s: git cat-file answered %d lines for %d refs", repo, len(lines), len(names))
	}
	for i, line := range lines {
		// "<hash> commit [<size>]", or "<name> missing" (or "ambiguous").
		if f := strings.Fields(line); len(f) >= 2 && f[1] == "commit" && commitHashRE.MatchString(f[0]) {
			s.commits[names[i]] = f[0]
		}
	}
	return nil
}

// originHEAD is the ref that names origin's default branch.
const originHEAD = "refs/remotes/origin/HEAD"

// plainRefName reports whether ref is a name cat-file reads as that ref
// and nothing else: no revision syntax (":", "^", "~", "@{", ".."), no
// space or control character. Git refuses all of them in branch names.
func plainRefName(ref string) bool {
	if strings.Contains(ref, "..") || strings.Contains(ref, "@{") || strings.HasSuffix(ref, "/") {
		return false
	}
	for _, r := range ref {
		if r <= ' ' || r == 0x7f || strings.ContainsRune(`:^~?*[\`, r) {
			return false
		}
	}
	return true
}

// tip returns rev as the full hash of a ref's commit when rev is one
// read (the usual commit_hash, a branch head), so it needs no git
// process to resolve.
func (s refSet) tip(rev string) (string, bool) {
	rev = strings.ToLower(rev)
	for _, hash := range s.commits {
		if hash == rev {
			return hash, true
		}
	}
	return "", false
}

// hasOrigin reports whether any of origin's refs read exists.
func (s refSet) hasOrigin() bool {
	for ref := range s.commits {
		if strings.HasPrefix(ref, "refs/remotes/origin/") {
			return true
		}
	}
	return false
}

// existing returns those of branch's refs that exist, local first. The
// branch must have been read.
func (s refSet) existing(branch string) []string {
	if branch == "" {
		return nil
	}
	var refs []string
	for _, ref := range []string{"refs/heads/" + branch, "refs/remotes/origin/" + branch} {
		if !s.asked[ref] {
			panic("refSet: " + ref + " was not read")
		}
		if _, ok := s.commits[ref]; ok {
			refs = append(refs, ref)
		}
	}
	return refs
}

// head is a branch's commit, local first then origin's; a missing branch
// is an ErrBranchMissing.
func (s refSet) head(repo, branch string) (string, error) {
	if branch == "" || strings.HasPrefix(branch, "-") {
		return "", temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("branch %q is not a valid branch name in %s", branch, repo), ErrBranchMissing, nil)
	}
	refs := s.existing(branch)
	if len(refs) == 0 {
		return "", temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("branch %q not found in %s, neither locally nor on origin", branch, repo), ErrBranchMissing, nil)
	}
	return s.commits[refs[0]], nil
}
