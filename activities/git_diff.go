package activities

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"go.temporal.io/sdk/temporal"

	"github.com/ampflow/ampflow/activities/github"
	"github.com/ampflow/ampflow/amp"
)

// commitHashRE is what an executor may give as commit_hash: a full or
// abbreviated hex hash. Anything else (a branch name, an option) is refused.
// ancestorWalk is how many commits isAncestor reads before it asks git
// merge-base.
const ancestorWalk = 64

var commitHashRE = regexp.MustCompile(`^[0-9a-fA-F]{4,64}$`)

// diffFlags keep user configuration out of diffs: no renames (a rename is
// the old path removed and the new one added), no external or textconv
// drivers, no colour.
var diffFlags = []string{"--no-renames", "--no-ext-diff", "--no-textconv", "--no-color"}

// CheckResult compares an executor's claimed result with the repository.
// The subtask's diff is merge-base(default, commit)..commit. A commit that
// is reachable from main, master or the default branch, or not from the
// task branch, sets Violation; a claimed diff_summary that differs from git
// fills Mismatches. Claimed paths match git paths exactly or, when a claim
// is a bare suffix such as "Foo.swift", the one git path ending in it.
func (g *Git) CheckResult(ctx context.Context, in CheckResultInput) (CheckResultOutput, error) {
	branch := normalizeBranch(in.Branch)
	c := strings.TrimSpace(in.Commit)
	rev := ""
	if commitHashRE.MatchString(c) {
		rev = c
	}
	var err error
	if in.Repo, err = g.LocalAt(ctx, in.Repo, branch, rev); err != nil {
		return CheckResultOutput{}, err
	}
	def := normalizeBranch(in.DefaultBranch)
	refs, err := g.openRefs(ctx, in.Repo, branch, def)
	if err != nil {
		return CheckResultOutput{}, err
	}
	full, ok := refs.tip(rev)
	if !ok && rev != "" {
		if full, err = g.openRepo(ctx, in.Repo, rev); err != nil {
			return CheckResultOutput{}, err
		}
	}
	commit, err := refs.head(in.Repo, branch)
	if err != nil {
		return CheckResultOutput{}, err
	}
	if c != "" {
		if rev == "" {
			return CheckResultOutput{}, temporal.NewNonRetryableApplicationError(
				fmt.Sprintf("commit_hash %q is not a commit hash (repository %s, branch %s)", c, in.Repo, branch), ErrCommitMissing, nil)
		}
		if full == "" {
			return CheckResultOutput{}, temporal.NewNonRetryableApplicationError(
				fmt.Sprintf("commit %s not found in %s (branch %s)", c, in.Repo, branch), ErrCommitMissing, nil)
		}
		commit = full
	}
	out := CheckResultOutput{Commit: commit}

	if def == "" {
		if def, _, err = g.defaultBranch(ctx, in.Repo, &refs, branch, nil); err != nil {
			return out, fmt.Errorf("finding the default branch of %s: %w", in.Repo, err)
		}
	}
	var pinned ancestry
	on, err := g.branchesWith(ctx, in, refs, def, branch, commit, &pinned)
	if err != nil {
		return out, err
	}
	if base := strings.ToLower(in.Base); base != "" && commit == base {
		// The branch head is still the base: nothing was committed, which is
		// not the same as committing onto main.
		out.NoCommit = true
		out.Violation = fmt.Sprintf("the executor made no commit on %s: its head is still %s, the head of %s when the plan was approved (%s)",
			branch, ShortHash(commit), def, in.Repo)
	}
	var baseRefs []string
	for _, p := range protectedBranches(def) {
		for _, ref := range refs.existing(p) {
			if on[ref] && out.Violation == "" {
				out.Violation = fmt.Sprintf("commit %s is on protected branch %s (%s) of %s", ShortHash(commit), p, ref, in.Repo)
			}
			if p == def || def == "" {
				baseRefs = append(baseRefs, ref)
			}
		}
	}
	if out.Violation == "" && !slices.ContainsFunc(refs.existing(branch), func(ref string) bool { return on[ref] }) {
		out.Violation = fmt.Sprintf("commit %s is not on branch %s of %s; %s", ShortHash(commit), branch, in.Repo, whereIs(on))
	}

	base, err := g.diffBase(ctx, in, commit, baseRefs, &out, &pinned)
	if err != nil {
		return out, err
	}
	url, onGitHub := compareURL(in, refs, on, def, base, commit)
	d := g.readDiff(ctx, in.Repo, base, commit, !onGitHub && g.Diffs != nil)
	switch {
	case errors.Is(d.statErr, errDiffTooLarge):
		out.Mismatches = append(out.Mismatches, g.tooLarge(base, commit, "diff_summary"))
	case d.statErr != nil:
		return out, fmt.Errorf("diffing %s..%s in %s: %w", ShortHash(base), ShortHash(commit), in.Repo, d.statErr)
	default:
		out.Actual, err = parseNumstat(d.stat)
		if err != nil {
			return out, fmt.Errorf("diffing %s..%s in %s: %w", ShortHash(base), ShortHash(commit), in.Repo, err)
		}
		out.Mismatches = compareDiff(in.Claimed, out.Actual)
	}
	switch {
	case onGitHub || g.Diffs == nil:
		out.DiffURL = url
	case errors.Is(d.patchErr, errDiffTooLarge):
		out.Mismatches = append(out.Mismatches, g.tooLarge(base, commit, "diff"))
	case d.patchErr != nil:
		return out, fmt.Errorf("diffing %s..%s in %s: %w", ShortHash(base), ShortHash(commit), in.Repo, d.patchErr)
	default:
		if out.DiffURL, err = g.Diffs.WriteDiff(in.TaskID, in.MsgID, d.patch); err != nil {
			return out, fmt.Errorf("keeping the diff of %s: %w", in.MsgID, err)
		}
	}
	return out, nil
}

// whereIs says which branches hold a commit that is off its task's branch.
func whereIs(on map[string]bool) string {
	var names []string
	for ref := range on {
		names = append(names, strings.TrimPrefix(strings.TrimPrefix(ref, "refs/heads/"), "refs/remotes/"))
	}
	if len(names) == 0 {
		return "it is on no branch"
	}
	sort.Strings(names)
	const most = 5
	if len(names) > most {
		return fmt.Sprintf("it is on %s and %d more", strings.Join(names[:most], ", "), len(names)-most)
	}
	return "it is on " + strings.Join(names, ", ")
}

// ShortHash is the first 12 digits of a commit hash, for messages.
func ShortHash(hash string) string {
	if len(hash) > 12 {
		return hash[:12]
	}
	return hash
}

// branchesWith returns the branches, local and origin's, that commit is
// on. Usually that needs no for-each-ref --contains: with no origin
// branches, the task branch at commit and every protected branch still at
// the pinned base, a commit that strictly descends from that base is on
// the task branch and on no protected one.
func (g *Git) branchesWith(ctx context.Context, in CheckResultInput, refs refSet, def, branch, commit string, pinned *ancestry) (map[string]bool, error) {
	base := strings.ToLower(in.Base)
	own := refs.existing(branch)
	usual := commitHashRE.MatchString(base) && base != commit && !refs.hasOrigin() && len(own) > 0
	for _, ref := range own {
		usual = usual && refs.commits[ref] == commit
	}
	for _, p := range protectedBranches(def) {
		for _, ref := range refs.existing(p) {
			usual = usual && refs.commits[ref] == base
		}
	}
	if usual && g.isAncestor(ctx, in.Repo, in.Base, commit, pinned) == nil {
		on := map[string]bool{}
		for _, ref := range own {
			on[ref] = true
		}
		return on, nil
	}
	return g.refsContaining(ctx, in.Repo, commit)
}

// ancestry keeps the answer of the one merge-base --is-ancestor a check
// asks.
type ancestry struct {
	asked bool
	err   error
}

// isAncestor answers git merge-base --is-ancestor a b, once per memo; nil
// means a is an ancestor of b.
func (g *Git) isAncestor(ctx context.Context, repo, a, b string, memo *ancestry) error {
	if !memo.asked {
		// Usually a is a few commits behind b (a task's commits on its
		// base), which a short walk of b's parents proves with no git
		// process; beyond it, merge-base decides.
		if len(a) != len(b) || !g.descends(ctx, repo, a, b, ancestorWalk) {
			_, memo.err = g.run(ctx, repo, "merge-base", "--is-ancestor", a, b)
		}
		memo.asked = true
	}
	return memo.err
}

// refsContaining returns the branches, local and origin's, that commit is
// on, in one git process however many there are to check.
func (g *Git) refsContaining(ctx context.Context, repo, commit string) (map[string]bool, error) {
	out, err := g.run(ctx, repo, "for-each-ref", "--contains", commit, "--format=%(refname)", "refs/heads/", "refs/remotes/origin/")
	if err != nil {
		return nil, fmt.Errorf("finding the branches %s is on in %s: %w", ShortHash(commit), repo, err)
	}
	on := map[string]bool{}
	for ref := range strings.Lines(string(out)) {
		on[strings.TrimSpace(ref)] = true
	}
	return on, nil
}

// diffBase is where the result's diff starts: the base pinned when the
// plan was approved, or else the merge base with the default branch. A
// commit that does not descend from the pinned base sets Violation.
func (g *Git) diffBase(ctx context.Context, in CheckResultInput, commit string, baseRefs []string, out *CheckResultOutput, pinned *ancestry) (string, error) {
	if in.Base == "" {
		return g.mergeBase(ctx, in.Repo, commit, baseRefs)
	}
	if !commitHashRE.MatchString(in.Base) {
		return "", temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("the pinned base %q is not a commit hash (repository %s)", in.Base, in.Repo), ErrCommitMissing, nil)
	}
	err := g.isAncestor(ctx, in.Repo, in.Base, commit, pinned)
	if err != nil && out.Violation == "" {
		why := "does not descend from"
		if !exitCode1(err) {
			why = "cannot be checked against"
		}
		out.Violation = fmt.Sprintf("commit %s %s %s, the head of the default branch when the plan was approved: the branch was rebased or reset past it (%s)",
			ShortHash(commit), why, ShortHash(in.Base), in.Repo)
	}
	return in.Base, nil
}

// mergeBase is the best common ancestor of commit and any of refs; with no
// refs or no common history it is the empty tree, so the diff is the whole
// commit.
func (g *Git) mergeBase(ctx context.Context, repo, commit string, refs []string) (string, error) {
	if len(refs) > 0 {
		out, err := g.run(ctx, repo, append([]string{"merge-base", commit}, refs...)...)
		if err == nil {
			return strings.TrimSpace(string(out)), nil
		}
		if !exitCode1(err) {
			return "", fmt.Errorf("finding the merge base of %s in %s: %w", ShortHash(commit), repo, err)
		}
	}
	out, err := g.run(ctx, repo, "hash-object", "-t", "tree", "--stdin")
	if err != nil {
		return "", fmt.Errorf("hashing the empty tree in %s: %w", repo, err)
	}
	return strings.TrimSpace(string(out)), nil
}

// parseNumstat reads `git diff --numstat -z` without renames: records of
// "added\tremoved\tpath\x00". Binary files show "-" and count 0/0.
func parseNumstat(out []byte) (amp.DiffSummary, error) {
	sum := amp.DiffSummary{FilesChanged: []string{}}
	for rec := range bytes.SplitSeq(out, []byte{0}) {
		if len(rec) == 0 {
			continue
		}
		fields := strings.SplitN(string(rec), "\t", 3)
		if len(fields) != 3 {
			return sum, fmt.Errorf("unexpected numstat record %q", rec)
		}
		for i, n := range fields[:2] {
			if n == "-" {
				continue
			}
			v, err := strconv.Atoi(n)
			if err != nil {
				return sum, fmt.Errorf("unexpected numstat count %q: %w", n, err)
			}
			if i == 0 {
				sum.LinesAdded += v
			} else {
				sum.LinesRemoved += v
			}
		}
		sum.FilesChanged = append(sum.FilesChanged, fields[2])
	}
	return sum, nil
}

// cleanClaimedPath turns a claimed path into the repository-relative form
// git prints.
func cleanClaimedPath(p string) string {
	p = strings.TrimSpace(strings.ReplaceAll(p, "\\", "/"))
	if p == "" {
		return ""
	}
	p = strings.TrimLeft(path.Clean("/"+p), "/")
	return p
}

// compareDiff lists the differences between a claimed and an actual diff
// summary in words an admin can read.
func compareDiff(claimed, actual amp.DiffSummary) []string {
	var out []string
	inGit := make(map[string]bool, len(actual.FilesChanged))
	for _, f := range actual.FilesChanged {
		inGit[f] = true
	}
	matched := make(map[string]bool, len(actual.FilesChanged))
	for _, raw := range claimed.FilesChanged {
		c := cleanClaimedPath(raw)
		switch {
		case c == "":
			out = append(out, fmt.Sprintf("files_changed: claimed %q is not a path", raw))
		case inGit[c]:
			matched[c] = true
		default:
			var hits []string
			for _, f := range actual.FilesChanged {
				if strings.HasSuffix(f, "/"+c) {
					hits = append(hits, f)
				}
			}
			if len(hits) == 1 {
				matched[hits[0]] = true
				continue
			}
			out = append(out, fmt.Sprintf("files_changed: claimed %s not in git diff", raw))
		}
	}
	var unclaimed []string
	for _, f := range actual.FilesChanged {
		if !matched[f] {
			unclaimed = append(unclaimed, f)
		}
	}
	sort.Strings(unclaimed)
	for _, f := range unclaimed {
		out = append(out, fmt.Sprintf("files_changed: git diff shows %s, not claimed", f))
	}
	if claimed.LinesAdded != actual.LinesAdded {
		out = append(out, fmt.Sprintf("lines_added: claimed %d, git shows %d", claimed.LinesAdded, actual.LinesAdded))
	}
	if claimed.LinesRemoved != actual.LinesRemoved {
		out = append(out, fmt.Sprintf("lines_removed: claimed %d, git shows %d", claimed.LinesRemoved, actual.LinesRemoved))
	}
	return out
}

// compareURL is the GitHub compare URL of the result when the task has a
// GitHub repository (in.GitHubRepo) and the commit has been pushed to
// origin (on is where it is); ok is false when GitHub cannot show it, so
// the diff is kept through Git.Diffs instead.
func compareURL(in CheckResultInput, refs refSet, on map[string]bool, def, base, commit string) (url string, ok bool) {
	pushed := false
	for ref := range on {
		if strings.HasPrefix(ref, "refs/remotes/origin/") {
			pushed = true
			break
		}
	}
	// The repository is the one recorded when the task started, never
	// origin as it is now: an executor can point that anywhere.
	repo, named := github.ParseFullName(in.GitHubRepo)
	if !pushed || !named {
		return "", false
	}
	from := base
	if _, ok := refs.commits["refs/remotes/origin/"+def]; in.Base == "" && def != "" && ok {
		from = def
	}
	return repo.CompareURL(from, commit), true
}
