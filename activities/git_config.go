package activities

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// repoConfig is what CheckBranch reads of a repository's configuration.
type repoConfig struct {
	initDefault string // init.defaultBranch
	originURL   string // remote.origin.url
}

// readConfig reads repoConfig, unset keys empty: in one git process, or
// from configs when none of the files it came from has changed since.
func (g *Git) readConfig(ctx context.Context, repo string) (repoConfig, error) {
	key := g.bin() + "\x00" + repo
	if c, ok := configs.get(key); ok {
		return c, nil
	}
	// Stamped before git reads them: a file changed while git runs has
	// another stamp at the next check, which then reads it again.
	stamps := stampFiles(configFiles(repo))
	out, err := g.run(ctx, repo, "config", "--show-origin", "--get-regexp", `^(init\.defaultbranch|remote\.origin\.url)$`)
	if err != nil {
		if ctx.Err() != nil {
			return repoConfig{}, ctx.Err()
		}
		out = nil // exit 1: none is set
	}
	var c repoConfig
	keep := stamps != nil
	for line := range strings.Lines(string(out)) {
		origin, entry, _ := strings.Cut(strings.TrimRight(line, "\n"), "\t")
		key, val, _ := strings.Cut(entry, " ")
		switch key { // git prints the names in lower case; the last value wins, as with --get
		case "init.defaultbranch":
			c.initDefault = strings.TrimSpace(val)
		case "remote.origin.url":
			c.originURL = strings.TrimSpace(val)
		}
		// A value from a file not stamped (another system path, a
		// command line) is not kept.
		path, ok := strings.CutPrefix(origin, "file:")
		if ok && !filepath.IsAbs(path) {
			path = filepath.Join(repo, path) // the repository's own, as .git/config
		}
		keep = keep && ok && stamps.has(path)
	}
	if keep {
		configs.put(key, c, stamps)
	}
	return c, nil
}

// configs keeps the configuration readConfig read of each repository
// while the files git reads it from are as they were: a task's checks
// then start no git for it. An entry is read again after configKeep in
// any case, which bounds how long a change git reads from elsewhere (a
// system configuration outside /etc) goes unseen.
var configs = configCache{m: map[string]cachedConfig{}}

const (
	configKeep = time.Minute
	configMost = 256
)

type configCache struct {
	mu sync.Mutex
	m  map[string]cachedConfig
}

type cachedConfig struct {
	cfg    repoConfig
	stamps fileStamps
	read   time.Time
}

func (c *configCache) get(key string) (repoConfig, bool) {
	c.mu.Lock()
	e, ok := c.m[key]
	c.mu.Unlock()
	if !ok || time.Since(e.read) > configKeep || !e.stamps.current() {
		return repoConfig{}, false
	}
	return e.cfg, true
}

func (c *configCache) put(key string, cfg repoConfig, stamps fileStamps) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.m) >= configMost {
		clear(c.m)
	}
	c.m[key] = cachedConfig{cfg: cfg, stamps: stamps, read: time.Now()}
}

// configFiles are the files git reads the configuration of a repository
// from under gitsafe's environment (HOME, no XDG_CONFIG_HOME): the
// system's, the user's two, the repository's own and its worktree's.
func configFiles(repo string) []string {
	files := []string{"/etc/gitconfig"}
	if home := os.Getenv("HOME"); home != "" {
		files = append(files, filepath.Join(home, ".gitconfig"), filepath.Join(home, ".config", "git", "config"))
	}
	gitDir := filepath.Join(repo, ".git")
	return append(files, filepath.Join(gitDir, "config"), filepath.Join(gitDir, "config.worktree"))
}

// fileStamp is what a file was when stamped: missing, or its identity,
// size and modification time (git writes its configuration to a new file
// and renames it over the old).
type fileStamp struct {
	path string
	info os.FileInfo // nil: missing
}

type fileStamps []fileStamp

// stampFiles stamps files; nil when the configuration cannot be kept: a
// repository whose .git is not a directory (a linked worktree, a
// submodule), a file that cannot be read, or one that includes others,
// which may change, or apply by branch, without it changing.
func stampFiles(files []string) fileStamps {
	var out fileStamps
	for _, f := range files {
		info, err := os.Stat(f)
		switch {
		case os.IsNotExist(err):
			if filepath.Base(f) == "config" && filepath.Base(filepath.Dir(f)) == ".git" {
				return nil // the repository's own is not in .git/
			}
			out = append(out, fileStamp{path: f})
			continue
		case err != nil || !info.Mode().IsRegular():
			return nil
		}
		b, err := os.ReadFile(f)
		if err != nil || bytes.Contains(bytes.ToLower(b), []byte("include")) {
			return nil
		}
		out = append(out, fileStamp{path: f, info: info})
	}
	return out
}

func (s fileStamps) has(path string) bool {
	for _, f := range s {
		if f.path == path || f.info != nil && sameFile(f.info, path) {
			return true
		}
	}
	return false
}

// current reports whether every file is as stamped.
func (s fileStamps) current() bool {
	for _, f := range s {
		info, err := os.Stat(f.path)
		if f.info == nil {
			if !os.IsNotExist(err) {
				return false
			}
			continue
		}
		if err != nil || !os.SameFile(f.info, info) || info.Size() != f.info.Size() || !info.ModTime().Equal(f.info.ModTime()) {
			return false
		}
	}
	return true
}

func sameFile(info os.FileInfo, path string) bool {
	other, err := os.Stat(path)
	return err == nil && os.SameFile(info, other)
}
