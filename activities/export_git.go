package activities

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// pushAttempts and pushBackoff bound how long one export waits for a push.
const (
	pushAttempts = 4
	pushBackoff  = 200 * time.Millisecond
)

// exportGit commits (and pushes) the export's work tree. Commits go
// through one mutex: git has one index.
type exportGit struct {
	root   string
	bin    string
	remote string
	push   bool
	ident  []string

	mu          sync.Mutex
	pushMu      sync.Mutex
	pushPending bool // guarded by mu
}

func openExportGit(root string, opts ExportOptions) (*exportGit, error) {
	g := &exportGit{root: root, bin: opts.GitBin, remote: opts.Remote, push: opts.Push}
	if g.bin == "" {
		g.bin = "git"
	}
	if g.remote == "" {
		g.remote = "origin"
	}
	name, email := opts.AuthorName, opts.AuthorEmail
	if name == "" {
		name = "ampflow"
	}
	if email == "" {
		email = "ampflow@localhost"
	}
	g.ident = []string{"-c", "user.name=" + name, "-c", "user.email=" + email, "-c", "commit.gpgsign=false"}
	if _, err := os.Stat(filepath.Join(root, ".git")); errors.Is(err, os.ErrNotExist) {
		if _, err := g.run(context.Background(), "init", "-q", "-b", "main"); err != nil {
			return nil, fmt.Errorf("initialising SSOT repository %s: %w", root, err)
		}
	} else if err != nil {
		return nil, fmt.Errorf("opening SSOT repository %s: %w", root, err)
	}
	if err := g.excludeTemps(context.Background()); err != nil {
		return nil, fmt.Errorf("opening SSOT repository %s: %w", root, err)
	}
	return g, nil
}

// gitExcludes are the files the export leaves out of its commits: the
// temporary files an export leaves when it is killed mid-write.
var gitExcludes = []string{"/tasks/.tmp-*"}

// excludeTemps adds gitExcludes to the repository's info/exclude, so
// those files are neither committed nor shown in git status.
func (g *exportGit) excludeTemps(ctx context.Context) error {
	out, err := g.run(ctx, "rev-parse", "--git-path", "info/exclude")
	if err != nil {
		return err
	}
	path := strings.TrimSpace(string(out))
	if !filepath.IsAbs(path) {
		path = filepath.Join(g.root, path)
	}
	data, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	have := map[string]bool{}
	for line := range strings.Lines(string(data)) {
		have[strings.TrimSpace(line)] = true
	}
	add := ""
	for _, pattern := range gitExcludes {
		if !have[pattern] {
			add += pattern + "\n"
		}
	}
	if add == "" {
		return nil
	}
	if len(data) > 0 && !strings.HasSuffix(string(data), "\n") {
		add = "\n" + add
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	_, err = f.WriteString(add)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

func (g *exportGit) run(ctx context.Context, args ...string) ([]byte, error) {
	return RunGit(ctx, g.bin, g.root, true, append(append([]string{}, g.ident...), args...)...)
}

// commitChanged commits paths (absolute, inside the root) when they
// differ from HEAD, and reports whether it made a commit. It runs even
// when nothing was written now, so a commit that failed after its files
// were written is made on the retry. It is not cancelled with ctx: a
// killed git leaves index.lock behind.
func (g *exportGit) commitChanged(ctx context.Context, msg string, paths ...string) (bool, error) {
	ctx = context.WithoutCancel(ctx)
	rel := make([]string, len(paths))
	for i, p := range paths {
		r, err := filepath.Rel(g.root, p)
		if err != nil {
			return false, fmt.Errorf("committing %s: %w", p, err)
		}
		rel[i] = r
	}
	committed := false
	g.mu.Lock()
	_, err := g.run(ctx, append([]string{"add", "-A", "--"}, rel...)...)
	if err == nil {
		_, err = g.run(ctx, append([]string{"diff", "--cached", "--quiet", "--"}, rel...)...)
		switch {
		case err == nil:
			// Nothing staged: already committed.
		case exitCode1(err):
			_, err = g.run(ctx, append([]string{"commit", "-q", "--no-verify", "-m", msg, "--"}, rel...)...)
			if err == nil {
				g.pushPending = true
				committed = true
			}
		}
	}
	pending := g.pushPending
	g.mu.Unlock()
	if err != nil {
		return false, fmt.Errorf("committing %s: %w", strings.Join(rel, " "), err)
	}
	if g.push && pending {
		return committed, g.pushHead(ctx)
	}
	return committed, nil
}

// pushHead pushes the current branch, retrying with backoff.
func (g *exportGit) pushHead(ctx context.Context) error {
	g.pushMu.Lock()
	defer g.pushMu.Unlock()
	g.mu.Lock()
	pending := g.pushPending
	g.mu.Unlock()
	if !pending {
		return nil // pushed by a concurrent export meanwhile
	}
	out, err := g.run(ctx, "symbolic-ref", "--short", "HEAD")
	if err != nil {
		return fmt.Errorf("pushing SSOT: finding its branch: %w", err)
	}
	refspec := "HEAD:refs/heads/" + strings.TrimSpace(string(out))
	g.mu.Lock()
	g.pushPending = false // commits made from here on need another push
	g.mu.Unlock()
	delay := pushBackoff
	for attempt := 1; ; attempt++ {
		_, err = g.run(ctx, "push", "-q", g.remote, refspec)
		if err == nil {
			return nil
		}
		if attempt == pushAttempts {
			break
		}
		time.Sleep(delay)
		delay *= 2
	}
	g.mu.Lock()
	g.pushPending = true
	g.mu.Unlock()
	return fmt.Errorf("pushing SSOT to %s after %d attempts: %w", g.remote, pushAttempts, err)
}

// writeFile replaces path with data through a temporary file and a
// rename, so a reader never sees half a file. It does not sync: the
// store is the record, and the next export rewrites a file a crash left
// short.
func writeFile(path string, data []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), ".tmp-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
}
