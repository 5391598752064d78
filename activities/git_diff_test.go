package activities

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"testing"

	"github.com/ampflow/ampflow/activities/gittest"
	"github.com/ampflow/ampflow/activities/ssot"
)

// The numstat and the patch are read from one git process; what is kept
// must still be git diff --binary's patch, byte for byte, and the numstat
// must stop where the patch starts, whatever the paths hold.
func TestCheckResultKeepsGitsPatch(t *testing.T) {
	repo := gittest.NewRepo(t, "main")
	base := gittest.Git(t, repo, "rev-parse", "HEAD")
	gittest.Git(t, repo, "checkout", "-q", "-b", "feature/x")
	commit := gittest.CommitFiles(t, repo, "odd", map[string]string{
		"tab\tand\nnewline.txt": "one\ntwo\n",
		"lib/core.go":           "package lib\n\nfunc B() {}\n",
		"blob.bin":              "\x00\x01\x00\x02",
	})
	patch := func(t *testing.T, from string) []byte {
		t.Helper()
		cmd := exec.Command("git", append(append([]string{"diff", "--binary"}, diffFlags...), from, commit, "--")...)
		cmd.Dir = repo
		cmd.Env = append(os.Environ(), gittest.Env...)
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("git diff: %v", err)
		}
		return out
	}
	store := newSSOT(t)
	g := &Git{Diffs: store}
	cases := []struct {
		name, base string
		claimed    []string
		added      int
	}{
		{"Changes", base, []string{"blob.bin", "lib/core.go", "tab\tand\nnewline.txt"}, 3},
		{"Empty", commit, []string{}, 0},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			msgID := "task_result-T-2026-001-" + string(rune('1'+i))
			out, err := g.CheckResult(context.Background(), CheckResultInput{TaskID: "T-2026-001", MsgID: msgID, Repo: repo,
				Branch: "feature/x", Commit: commit, Base: tc.base, DefaultBranch: "main", Claimed: diffSum(tc.claimed, tc.added, 1)})
			if err != nil {
				t.Fatal(err)
			}
			if len(out.Actual.FilesChanged) != len(tc.claimed) || out.Actual.LinesAdded != tc.added || out.Actual.LinesRemoved != min(tc.added, 1) {
				t.Errorf("actual = %+v, want %d files, %d added", out.Actual, len(tc.claimed), tc.added)
			}
			kept, err := store.Store.File(context.Background(), "T-2026-001", ssot.DiffName(msgID))
			if err != nil {
				t.Fatalf("the diff was not kept: %v", err)
			}
			if want := patch(t, tc.base); !bytes.Equal(kept, want) {
				t.Errorf("kept diff differs from git diff --binary:\n%q\nwant:\n%q", kept, want)
			}
		})
	}
}
