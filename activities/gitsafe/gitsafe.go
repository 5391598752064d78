// Package gitsafe is how ampflow runs git in a repository an agent may
// have written to: nothing the repository's configuration, hooks or
// attributes name runs, and no secret of the worker reaches git.
//
// Git runs code a repository names in many places: hooks (post-checkout
// on worktree add, post-commit and reference-transaction on commit and
// update-ref), core.fsmonitor on every look at the work tree, the clean
// and smudge filters and diff drivers that .gitattributes picks and the
// configuration defines, core.sshCommand, credential helpers, askpass,
// gpg, the ext:: transport. Options given with -c win over every
// configuration file, so Args turns each of those off; the filters and
// drivers, named by the repository, are found with Drivers and turned off
// by name.
package gitsafe

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"strings"
)

// Config is what every git command ampflow runs is given with -c: hooks,
// fsmonitor, external programs and the ext transport off, and no pager,
// editor, askpass, credential helper or signing.
var Config = []string{
	"core.hooksPath=" + os.DevNull,
	"core.fsmonitor=false",
	"core.sshCommand=ssh",
	"core.askPass=",
	"core.pager=cat",
	"core.editor=:",
	"sequence.editor=:",
	"core.alternateRefsCommand=",
	"core.attributesFile=" + os.DevNull,
	"credential.helper=",
	"credential.interactive=false",
	"protocol.ext.allow=never",
	"diff.external=",
	"commit.gpgSign=false",
	"tag.gpgSign=false",
	"gpg.program=gpg",
	"color.ui=false",
	"core.quotepath=off",
	// Submodules are other repositories, with configuration of their
	// own: nothing recurses into them.
	"submodule.recurse=false",
	"diff.ignoreSubmodules=all",
	"status.submoduleSummary=false",
}

// Args is args after Config's options and drivers, the options that turn
// off the filters and diff drivers the repository defines (Drivers).
func Args(drivers []string, args ...string) []string {
	full := make([]string, 0, 2*(len(Config)+len(drivers))+len(args))
	for _, c := range Config {
		full = append(full, "-c", c)
	}
	for _, d := range drivers {
		full = append(full, "-c", d)
	}
	return append(full, args...)
}

// baseEnv names the worker's variables git gets: enough to find git and
// the user's own configuration, nothing of ampflow's.
var baseEnv = []string{"PATH", "HOME", "TMPDIR"}

// Env is git's whole environment: PATH, HOME and TMPDIR of the worker,
// then git kept from prompting, translating or taking optional locks,
// then extra.
func Env(extra ...string) []string {
	env := make([]string, 0, len(baseEnv)+5+len(extra))
	for _, name := range baseEnv {
		if v, ok := os.LookupEnv(name); ok {
			env = append(env, name+"="+v)
		}
	}
	env = append(env, "GIT_TERMINAL_PROMPT=0", "LC_ALL=C", "GIT_PAGER=cat", "GIT_OPTIONAL_LOCKS=0", "GIT_ASKPASS=", "SSH_ASKPASS=")
	return append(env, extra...)
}

// driverKeys are the configuration keys that name a program by a
// driver's name, with the value that makes each do nothing: a filter
// passes content through, a textconv changes nothing. External diff
// commands are not among them: every diff ampflow reads passes
// --no-ext-diff.
var driverKeys = map[string]string{
	"filter.clean":    "cat",
	"filter.smudge":   "cat",
	"filter.process":  "",
	"filter.required": "false",
	"diff.textconv":   "cat",
}

// Drivers reads, without running anything, the filters and diff drivers
// the configuration of the repository at dir defines (its own, included
// files, the user's and the system's), and returns the -c options that
// make each do nothing. git is the git binary.
func Drivers(ctx context.Context, git, dir string) ([]string, error) {
	cmd := exec.CommandContext(ctx, git, Args(nil, "config", "--null", "--includes", "--name-only", "--get-regexp", `^(filter|diff)\..*\.`)...)
	cmd.Dir = dir
	cmd.Env = Env()
	var out bytes.Buffer
	cmd.Stdout = &out
	if err := cmd.Run(); err != nil {
		if ee, ok := err.(*exec.ExitError); ok && ee.ExitCode() == 1 {
			return nil, nil // none defined
		}
		return nil, err
	}
	seen := map[string]bool{}
	var opts []string
	// NUL-separated: a driver's name may hold any character but a NUL,
	// spaces of every kind included.
	for _, key := range strings.Split(out.String(), "\x00") {
		if key == "" {
			continue
		}
		section, _, _ := strings.Cut(key, ".")
		i := strings.LastIndexByte(key, '.')
		off, ok := driverKeys[strings.ToLower(section+"."+key[i+1:])]
		if !ok || seen[key] {
			continue
		}
		seen[key] = true
		opts = append(opts, key+"="+off)
	}
	return opts, nil
}
