package compose

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// instruction is one Dockerfile instruction, continuation lines joined.
type instruction struct {
	cmd  string // upper case: FROM, RUN, ...
	args string
}

// stage is one FROM and the instructions after it.
type stage struct {
	image string
	name  string
	body  []instruction
}

func readDockerfile(t *testing.T) []stage {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	var cur strings.Builder
	for _, l := range strings.Split(string(data), "\n") {
		l = strings.TrimSpace(l)
		if strings.HasPrefix(l, "#") || (l == "" && cur.Len() == 0) {
			continue
		}
		if rest, ok := strings.CutSuffix(l, "\\"); ok {
			cur.WriteString(rest + " ")
			continue
		}
		cur.WriteString(l)
		lines = append(lines, cur.String())
		cur.Reset()
	}
	var stages []stage
	for _, l := range lines {
		cmd, args, _ := strings.Cut(l, " ")
		in := instruction{cmd: strings.ToUpper(cmd), args: strings.TrimSpace(args)}
		if in.cmd == "FROM" {
			f := strings.Fields(in.args)
			s := stage{image: f[0]}
			if len(f) == 3 && strings.EqualFold(f[1], "AS") {
				s.name = f[2]
			}
			stages = append(stages, s)
			continue
		}
		if len(stages) == 0 {
			t.Fatalf("Dockerfile: %s before the first FROM", in.cmd)
		}
		stages[len(stages)-1].body = append(stages[len(stages)-1].body, in)
	}
	if len(stages) < 2 {
		t.Fatalf("Dockerfile has %d stages, want a build stage and a runtime stage", len(stages))
	}
	return stages
}

// args returns the arguments of every cmd instruction in s.
func (s stage) args(cmd string) []string {
	var out []string
	for _, in := range s.body {
		if in.cmd == cmd {
			out = append(out, in.args)
		}
	}
	return out
}

func (s stage) has(cmd string, pred func(string) bool) bool {
	return slices.ContainsFunc(s.args(cmd), pred)
}

func TestDockerfileBuild(t *testing.T) {
	stages := readDockerfile(t)
	b := stages[0]

	repo, tag := splitImage(b.image)
	goVersion := goModVersion(t, "go")
	// GOTOOLCHAIN=local: the image's Go must be go.mod's, or the build fails.
	if repo != "golang" || (tag != goVersion && !strings.HasPrefix(tag, goVersion+"-")) {
		t.Errorf("build stage FROM %s, want golang:%s (go.mod's go line)", b.image, goVersion)
	}
	env := strings.Join(b.args("ENV"), " ")
	for _, want := range []string{"CGO_ENABLED=0", "GOTOOLCHAIN=local"} {
		if !strings.Contains(env, want) {
			t.Errorf("build stage does not set %s (ENV %q)", want, env)
		}
	}
	build := regexp.MustCompile(`\bgo build\b.*\s-o\s+(\S+)\s.*\./cmd/ampflow\s*$`)
	var out string
	for _, run := range b.args("RUN") {
		if m := build.FindStringSubmatch(run); m != nil {
			out = m[1]
		}
	}
	if out == "" {
		t.Fatalf("build stage has no RUN go build -o FILE ./cmd/ampflow")
	}

	final := stages[len(stages)-1]
	if !final.has("COPY", func(a string) bool {
		return strings.Contains(a, "--from="+b.name+" ") && strings.Contains(a, out+" /usr/local/bin/ampflow")
	}) {
		t.Errorf("runtime stage does not copy %s from stage %q to /usr/local/bin/ampflow", out, b.name)
	}
}

func TestDockerfileRuntime(t *testing.T) {
	stages := readDockerfile(t)
	final := stages[len(stages)-1]

	if repo, tag := splitImage(final.image); tag == "" || tag == "latest" || repo == "golang" {
		t.Errorf("runtime stage FROM %s, want a small pinned base", final.image)
	}
	// The worker runs git for the SSOT and task branches.
	installsGit := regexp.MustCompile(`\b(apt-get install|apk add)\b.*\sgit(\s|$)`)
	if !final.has("RUN", installsGit.MatchString) {
		t.Errorf("runtime stage does not install git (RUN %q)", final.args("RUN"))
	}
	users := final.args("USER")
	if len(users) == 0 {
		t.Error("runtime stage runs as root: no USER")
	} else if u := strings.Split(users[len(users)-1], ":")[0]; u == "root" || u == "0" {
		t.Errorf("runtime stage runs as USER %s", u)
	}
	for _, tc := range []struct{ cmd, want string }{
		{"ENTRYPOINT", `["ampflow"]`},
		{"CMD", `["worker"]`},
		{"EXPOSE", "7480"},
		{"VOLUME", `["/data"]`},
	} {
		if !final.has(tc.cmd, func(a string) bool { return a == tc.want }) {
			t.Errorf("runtime stage has no %s %s (has %q)", tc.cmd, tc.want, final.args(tc.cmd))
		}
	}
	if !final.has("HEALTHCHECK", func(a string) bool { return strings.Contains(a, ":7480/healthz") }) {
		t.Errorf("runtime stage has no HEALTHCHECK on :7480/healthz (has %q)", final.args("HEALTHCHECK"))
	}
	if !final.has("RUN", func(a string) bool { return regexp.MustCompile(`\bcurl\b`).MatchString(a) }) {
		t.Error("the HEALTHCHECK runs curl, but the runtime stage does not install it")
	}
}

func TestDockerignore(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(root, ".dockerignore"))
	if err != nil {
		t.Fatal(err)
	}
	var patterns []string
	for _, l := range strings.Split(string(data), "\n") {
		l = strings.TrimSpace(l)
		if l != "" && !strings.HasPrefix(l, "#") {
			patterns = append(patterns, strings.Trim(l, "/"))
		}
	}
	ignored := func(path string) bool {
		for _, p := range patterns {
			if ok, _ := filepath.Match(p, path); ok {
				return true
			}
		}
		return false
	}
	for _, p := range []string{".git", "ampflow.yaml"} {
		if !ignored(p) {
			t.Errorf(".dockerignore lets %s into the build context", p)
		}
	}
	for _, p := range []string{"go.mod", "go.sum", "cmd", "config", "workers", "workflows", "activities", "amp", "integrations", "internal"} {
		if ignored(p) {
			t.Errorf(".dockerignore drops %s, which the build needs", p)
		}
	}
}
