package activities

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/ampflow/ampflow/activities/gitsafe"
)

// DefaultMaxDiff caps the git diff output read to check a result when
// Git.MaxDiff is zero.
const DefaultMaxDiff = 64 << 20

// errDiffTooLarge is a git diff whose output passed the cap.
var errDiffTooLarge = errors.New("git diff output too large")

func (g *Git) maxDiff() int64 {
	if g == nil || g.MaxDiff <= 0 {
		return DefaultMaxDiff
	}
	return g.MaxDiff
}

// tooLarge is the note a reviewer gets for a diff not checked or kept.
func (g *Git) tooLarge(base, commit, what string) string {
	return fmt.Sprintf("%s: too large to check: git diff %s..%s is over %d bytes; %s not verified, review the commit in the repository",
		what, ShortHash(base), ShortHash(commit), g.maxDiff(), what)
}

// runCapped runs git like run, reading at most maxDiff bytes of its
// output: past that git is stopped and errDiffTooLarge returned, so a huge
// diff costs no more memory than the cap.
func (g *Git) runCapped(ctx context.Context, dir string, args ...string) ([]byte, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	cmd := exec.CommandContext(ctx, g.bin(), gitsafe.Args(nil, args...)...)
	cmd.Dir = dir
	cmd.Env = gitEnv(false, "GIT_CEILING_DIRECTORIES="+filepath.Dir(dir))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	pipe, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("git %s: %w", strings.Join(args, " "), err)
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("git %s: %w", strings.Join(args, " "), err)
	}
	limit := g.maxDiff()
	out, rerr := io.ReadAll(io.LimitReader(pipe, limit+1))
	if int64(len(out)) > limit {
		cancel() // stops git; what it would still print is not wanted
		cmd.Wait()
		return nil, errDiffTooLarge
	}
	werr := cmd.Wait()
	switch {
	case ctx.Err() != nil:
		return nil, fmt.Errorf("git %s: %w", strings.Join(args, " "), ctx.Err())
	case werr != nil:
		return out, &gitError{args: args, stderr: stderr.String(), err: werr}
	case rerr != nil:
		return nil, fmt.Errorf("git %s: reading its output: %w", strings.Join(args, " "), rerr)
	}
	return out, nil
}

// diffOutput is what readDiff read; either error may be errDiffTooLarge.
type diffOutput struct {
	stat, patch       []byte
	statErr, patchErr error
}

// readDiff reads the numstat of base..commit and, when withPatch, the
// binary patch as well, in one git process: git prints the numstat
// records, an empty one, then the patch. Past the cap it reads them in a
// process each, so a numstat is still checked beside a patch too large to
// keep.
func (g *Git) readDiff(ctx context.Context, repo, base, commit string, withPatch bool) diffOutput {
	statArgs := append(append([]string{"diff", "--numstat", "-z"}, diffFlags...), base, commit, "--")
	patchArgs := append(append([]string{"diff", "--binary"}, diffFlags...), base, commit, "--")
	if !withPatch {
		stat, err := g.runCapped(ctx, repo, statArgs...)
		return diffOutput{stat: stat, statErr: err}
	}
	both, err := g.runCapped(ctx, repo, append(append([]string{"diff", "--numstat", "-z", "--binary"}, diffFlags...), base, commit, "--")...)
	if err == nil {
		// A numstat record never starts with NUL, so the first empty one
		// is the separator.
		stat, patch, _ := bytes.Cut(both, []byte{0, 0})
		return diffOutput{stat: stat, patch: patch}
	}
	if !errors.Is(err, errDiffTooLarge) {
		return diffOutput{statErr: err, patchErr: err}
	}
	var d diffOutput
	d.stat, d.statErr = g.runCapped(ctx, repo, statArgs...)
	if d.statErr != nil && !errors.Is(d.statErr, errDiffTooLarge) {
		return d
	}
	d.patch, d.patchErr = g.runCapped(ctx, repo, patchArgs...)
	return d
}
