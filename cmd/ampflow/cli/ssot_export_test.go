package cli

import (
	"context"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

func TestSSOTExport(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git:", err)
	}
	eachStoreEngine(t, func(t *testing.T, e storeEngine) {
		u := e.url(t)
		db := openTestStore(t, u)
		appendTo(t, db, "T-2026-001", "m1", "m2")
		appendTo(t, db, "T-2026-002", "n1")
		remote := filepath.Join(t.TempDir(), "mirror.git")
		git(t, filepath.Dir(remote), "init", "-q", "--bare", "-b", "main", remote)
		dir := filepath.Join(t.TempDir(), "ssot-git")
		env := storeEnv(t, u)
		env["AMPFLOW_SSOT_GIT_DIR"] = dir
		env["AMPFLOW_SSOT_GIT_REMOTE"] = remote

		r := run(t, "", env, nil, "ssot", "export")
		if r.code != ExitOK || r.stdout != "exported 2 tasks to "+dir+": 2 files changed, 0 removed; committed\n" || r.stderr != "" {
			t.Fatalf("exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
		}
		r = run(t, "", env, nil, "ssot", "export")
		if r.code != ExitOK || r.stdout != "exported 2 tasks to "+dir+": 0 files changed, 0 removed; nothing changed, no commit\n" {
			t.Fatalf("second export: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
		}
		if n := git(t, dir, "rev-list", "--count", "HEAD"); n != "1" {
			t.Fatalf("%s commits after two exports of one state, want 1", n)
		}

		// Nothing new to commit, but --push sends what the remote lacks.
		r = run(t, "", env, nil, "ssot", "export", "--push", "-o", "json")
		var rep exportReport
		if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil || r.code != ExitOK {
			t.Fatalf("exit %d, stdout %q, stderr %q: %v", r.code, r.stdout, r.stderr, err)
		}
		if !rep.Pushed || rep.Committed || rep.Tasks != 2 || rep.Remote != remote {
			t.Fatalf("push: %+v", rep)
		}
		if got, want := git(t, remote, "rev-parse", "main"), git(t, dir, "rev-parse", "HEAD"); got != want {
			t.Fatalf("remote main %s, want %s", got, want)
		}

		appendTo(t, db, "T-2026-001", "m3")
		r = run(t, "", env, nil, "ssot", "export", "--push", "T-2026-001")
		if r.code != ExitOK || !strings.HasSuffix(r.stdout, "1 files changed, 0 removed; committed; pushed to "+remote+"\n") {
			t.Fatalf("export of one task: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
		}
		var doc struct {
			Head    struct{ Seq int64 }
			Records []struct{ ID string }
		}
		if err := json.Unmarshal([]byte(git(t, remote, "show", "main:tasks/T-2026-001.json")), &doc); err != nil {
			t.Fatal(err)
		}
		head, err := db.Head(context.Background(), "T-2026-001")
		if err != nil {
			t.Fatal(err)
		}
		if doc.Head.Seq != 3 || head.Seq != 3 || len(doc.Records) != 3 || doc.Records[2].ID != "m3" {
			t.Fatalf("the remote's T-2026-001.json: %+v", doc)
		}
	})
}

func TestSSOTExportRefusals(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git:", err)
	}
	u := storeEngines[0].url(t)
	appendTo(t, openTestStore(t, u), "T-2026-001", "m1")
	missing := filepath.Join(t.TempDir(), "nope.db")
	for _, tt := range []struct {
		name       string
		url        string
		args       []string
		wantStderr string
	}{
		{"NoStore", missing, nil, "ampflow: no SSOT store at " + missing + ": check ssot.url\n"},
		{"PushFails", u, []string{"--push"}, "ampflow: exporting the SSOT to "},
	} {
		t.Run(tt.name, func(t *testing.T) {
			env := storeEnv(t, tt.url)
			env["AMPFLOW_SSOT_GIT_DIR"] = filepath.Join(t.TempDir(), "g")
			env["AMPFLOW_SSOT_GIT_REMOTE"] = filepath.Join(t.TempDir(), "no-such-remote.git")
			r := run(t, "", env, nil, append([]string{"ssot", "export"}, tt.args...)...)
			if r.code != ExitFailed || !strings.HasPrefix(r.stderr, tt.wantStderr) {
				t.Fatalf("exit %d, stdout %q, stderr %q; want 1, prefix %q", r.code, r.stdout, r.stderr, tt.wantStderr)
			}
		})
	}
}
