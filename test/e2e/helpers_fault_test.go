package e2e

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/ampflow/ampflow/activities/github/githubtest"
	"github.com/ampflow/ampflow/activities/ssot"
	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/task"
	"github.com/ampflow/ampflow/config"
)

// ghRepo is gitRepo with an origin on GitHub, so the GitHub CI provider
// and the compare URL logic take it.
func ghRepo(t *testing.T) string {
	repo := gitRepo(t)
	git(t, repo, "remote", "add", "origin", "https://github.com/acme/demo.git")
	return repo
}

// ciGitHub is a fake GitHub that the GitHub CI provider of a dev process
// started with env polls every second.
func ciGitHub(t *testing.T) (gh *githubtest.Server, env []string) {
	gh = githubtest.New(t, githubtest.Options{})
	return gh, []string{"AMPFLOW_CI_PROVIDER=github", "AMPFLOW_CI_GITHUB_TOKEN=fake-token",
		"AMPFLOW_CI_GITHUB_API_URL=" + gh.URL, "AMPFLOW_CI_POLL_INTERVAL=1s"}
}

// setCheck gives sha of acme/demo (ghRepo's origin) a check run of
// conclusion, "" for one in progress; the last one set is the one read.
func setCheck(gh *githubtest.Server, sha, conclusion string) {
	gh.AddCheckRun("acme", "demo", sha, "build", conclusion, githubtest.CheckOutput{}, nil, nil, "")
}

// checkPolls is how many times gh was asked for the check runs of sha.
func checkPolls(gh *githubtest.Server, sha string) int {
	n := 0
	for _, r := range gh.Requests() {
		if strings.Contains(r.Path, "/commits/"+sha+"/check-runs") {
			n++
		}
	}
	return n
}

// pushed commits the executor's work, makes it look pushed to origin, and
// gives the commit a passing check on gh.
func pushed(gh *githubtest.Server, a *agent, d amp.Message, body string) amp.Message {
	a.t.Helper()
	m := a.work(d, "hello.txt", body)
	git(a.t, a.repo, "update-ref", "refs/remotes/origin/feature/e2e", "HEAD")
	setCheck(gh, m.Result().CommitHash, "success")
	return m
}

// vmRSS reads the resident set size of a process, in kB.
func vmRSS(t *testing.T, pid int) int64 {
	t.Helper()
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			if err != nil {
				t.Fatalf("reading VmRSS %q: %v", rest, err)
			}
			return kb
		}
	}
	t.Fatalf("no VmRSS in /proc/%d/status", pid)
	return 0
}

// openSSOT opens the SSOT of a dev process's data directory, which the
// process may be writing.
func openSSOT(t *testing.T, dataDir string) *ssot.DB {
	t.Helper()
	db, err := ssot.Open(context.Background(), filepath.Join(dataDir, config.DefaultSSOTFile))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	// The chain is keyed with the decision key `ampflow dev` keeps in
	// data_dir, as the workers key it.
	if key, err := (config.Config{DataDir: dataDir}).StoreDecisionKey(); err == nil {
		db.KeyChain(key)
	}
	return db
}

// errorLogLines counts the entries of the SSOT error log.
func errorLogLines(t *testing.T, dataDir string) int {
	t.Helper()
	db := openSSOT(t, dataDir)
	n, cursor := 0, ""
	for {
		es, next, err := db.Errors(context.Background(), ssot.Page{Limit: ssot.MaxLimit, Cursor: cursor})
		if err != nil {
			t.Fatal(err)
		}
		n += len(es)
		if next == "" {
			return n
		}
		cursor = next
	}
}

// ssotHistory reads a task's records from the SSOT, which a running dev
// process may be writing.
func ssotHistory(t *testing.T, dataDir, taskID string) []ssot.Record {
	t.Helper()
	db := openSSOT(t, dataDir)
	var all []ssot.Record
	cursor := ""
	for {
		recs, next, err := db.History(context.Background(), taskID, ssot.Page{Limit: ssot.MaxLimit, Cursor: cursor})
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, recs...)
		if next == "" {
			return all
		}
		cursor = next
	}
}

// recordKey is what checkOnce counts a record as: the message type for
// messages, the kind for the rest.
func recordKey(r ssot.Record) string {
	if r.Kind == string(ssot.KindMessage) {
		if typ, _, ok := amp.ParseMsgID(r.ID); ok {
			return string(typ)
		}
	}
	return string(r.Kind)
}

// checkOnce checks that no record of the task is in the SSOT twice, that
// the record counts are want's, that every id of ids is there, and that
// the timeline names each message of the SSOT once.
func checkOnce(t *testing.T, dataDir string, st task.State, want map[string]int, ids ...string) []ssot.Record {
	t.Helper()
	hist := ssotHistory(t, dataDir, st.TaskID)
	seen := map[string]int{}
	counts := map[string]int{}
	for _, r := range hist {
		seen[r.ID]++
		counts[recordKey(r)]++
	}
	for id, n := range seen {
		if n > 1 {
			t.Errorf("%s: record %s is %d times in the SSOT", st.TaskID, id, n)
		}
	}
	for k, n := range want {
		if counts[k] != n {
			t.Errorf("%s: %d %s records in the SSOT, want %d (all: %v)", st.TaskID, counts[k], k, n, counts)
		}
	}
	for _, id := range ids {
		if seen[id] != 1 {
			t.Errorf("%s: record %s is %d times in the SSOT, want once", st.TaskID, id, seen[id])
		}
	}
	inTimeline := map[string]int{}
	for _, e := range st.Timeline {
		if e.MsgID != "" && (e.Kind == "message" || e.Kind == "ack") {
			inTimeline[e.MsgID]++
		}
	}
	for id, n := range inTimeline {
		if n != 1 || seen[id] != 1 {
			t.Errorf("%s: %s is %d times in the timeline and %d in the SSOT, want once each", st.TaskID, id, n, seen[id])
		}
	}
	for _, r := range hist {
		if (r.Kind == string(ssot.KindMessage) || r.Kind == string(ssot.KindAck)) && inTimeline[r.ID] != 1 {
			t.Errorf("%s: record %s of the SSOT is %d times in the timeline, want once", st.TaskID, r.ID, inTimeline[r.ID])
		}
	}
	return hist
}

// lifecycleRecords are the SSOT records of a one-subtask task that went
// through one round: the plan event, four messages and four ACKs.
func lifecycleRecords() map[string]int {
	return map[string]int{
		"event": 1, "task_dispatch": 1, "task_result": 1, "review_request": 1, "review_verdict": 1,
		"ack": 4, "escalation": 0,
	}
}
