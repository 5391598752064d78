package delivery

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/ampflow/ampflow/activities/runner"
)

// sessionStores are, by runner, where a CLI keeps the sessions --resume
// (or its runner's resume) reads, relative to HOME; a Codex run's are
// under its CODEX_HOME, codexSessions. They are all a run's HOME keeps
// from the run before it.
var sessionStores = map[string][]string{
	runner.Claude:   {".claude/projects"},
	runner.Gemini:   {".gemini/tmp"},
	runner.OpenCode: {".local/share/opencode"},
	// An ACP agent may be any of them (session/load reads the same
	// stores: Gemini CLI's, OpenCode's, Claude Code's behind its
	// adapter).
	runner.ACP: {".claude/projects", ".gemini/tmp", ".local/share/opencode"},
}

const codexSessions = "sessions"

// maxHomeFile bounds a file of a HOME template copied into a run's home.
const maxHomeFile = 8 << 20

// freshHome makes home the CLI state of one run: the template (the HOME
// the role's env names; empty: none) copied over it whole, and nothing of
// the role's earlier runs kept but keep, its session stores. A setting
// an agent wrote into its HOME, in this task or another, is gone in the
// next run.
func freshHome(home, template string, keep []string) error {
	if err := os.MkdirAll(home, 0o700); err != nil {
		return fmt.Errorf("making the run's home: %w", err)
	}
	if err := clearBut(home, "", keep); err != nil {
		return fmt.Errorf("clearing the run's home %s: %w", home, err)
	}
	if template == "" {
		return nil
	}
	return copyTree(template, home, keep)
}

// clearBut removes everything under dir/rel but the paths keep names and
// the directories that lead to them.
func clearBut(dir, rel string, keep []string) error {
	entries, err := os.ReadDir(filepath.Join(dir, rel))
	if err != nil {
		return err
	}
	for _, e := range entries {
		r := filepath.Join(rel, e.Name())
		switch {
		case slices.Contains(keep, r):
		case e.IsDir() && slices.ContainsFunc(keep, func(k string) bool { return strings.HasPrefix(k, r+"/") }):
			if err := clearBut(dir, r, keep); err != nil {
				return err
			}
		default:
			if err := os.RemoveAll(filepath.Join(dir, r)); err != nil {
				return err
			}
		}
	}
	return nil
}

// copyTree copies from's files into to, but for keep (the sessions are
// the run's own) and files past maxHomeFile; symbolic links are copied as
// links.
func copyTree(from, to string, keep []string) error {
	return filepath.WalkDir(from, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(from, path)
		if err != nil || rel == "." {
			return err
		}
		if slices.Contains(keep, rel) {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		dst := filepath.Join(to, rel)
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			return os.MkdirAll(dst, info.Mode().Perm()|0o700)
		case info.Mode()&fs.ModeSymlink != 0:
			target, err := os.Readlink(path)
			if err != nil {
				return err
			}
			_ = os.Remove(dst)
			return os.Symlink(target, dst)
		case !info.Mode().IsRegular() || info.Size() > maxHomeFile:
			return nil
		}
		return copyFile(path, dst, info.Mode().Perm())
	})
}

func copyFile(from, to string, perm fs.FileMode) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	_ = os.Remove(to)
	out, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY|os.O_EXCL, perm|0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
