package e2e

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/decision"
	"github.com/ampflow/ampflow/amp/task"
	"github.com/ampflow/ampflow/integrations/httpapi"
)

// agentScript plays the executor in command mode for the tasks that have
// a .wait file in dir: it notes each run, then waits for the test to
// write the reply (an ACK and a task_result) and prints it. The other
// tasks are played over the HTTP API: it stays out of their way until
// stopped, since an agent that exits without a reply fails its delivery.
const agentScript = `d='%DIR%'
cat >/dev/null
if [ ! -e "$d/$AMP_TASK_ID.wait" ]; then
	while [ ! -e "$d/stop" ]; do sleep 0.2; done
	exit 0
fi
echo "$AMP_MSG_ID" >>"$d/$AMP_TASK_ID.runs"
n=0
while [ ! -e "$d/$AMP_TASK_ID.reply" ]; do
	[ -e "$d/stop" ] && exit 4
	n=$((n + 1))
	[ "$n" -gt 1500 ] && exit 3
	sleep 0.2
done
cat "$d/$AMP_TASK_ID.reply"
`

// killCase is one task brought to a point of its lifecycle before the
// crash, then driven to done after the restart.
type killCase struct {
	name   string
	id     string
	before func(*killCase)
	after  func(*killCase)

	a        *agent
	dispatch amp.Message
	decision string
	sha      string
	polls    int
	ids      []string // records the SSOT must hold exactly once
}

// TestFaultKill9AtEachPoint brings five tasks to five points of the
// lifecycle, kills `ampflow dev` with SIGKILL once, restarts it on the
// same data dir and drives every task to done: what was sent, ACKed or
// raised before the crash is what the SSOT holds, once, and nothing is
// dispatched again.
func TestFaultKill9AtEachPoint(t *testing.T) {
	gh, ghEnv := ciGitHub(t)
	agentDir := t.TempDir()
	t.Cleanup(func() { _ = os.WriteFile(filepath.Join(agentDir, "stop"), nil, 0o644) })
	script := filepath.Join(agentDir, "agent.sh")
	writeFile(t, script, strings.ReplaceAll(agentScript, "%DIR%", agentDir))
	dataDir := t.TempDir()
	env := append(ghEnv,
		"AMPFLOW_AGENTS_EXECUTOR_MODE=command", "AMPFLOW_AGENTS_EXECUTOR_COMMAND=sh,"+script,
		// No admins: the open API acts as the local user, whom dev makes the admin.
		"AMPFLOW_POLICY_PLAN_APPROVAL_LOW=admin")
	p := startDev(t, dataDir, env...)
	api := newAPIClient(t, p.api, "")

	approve := func(c *killCase) {
		api.decide(api.pending(c.id, task.KindPlanApproval, 60*time.Second), decision.OptApprove)
		c.dispatch = api.outboxMsg(c.id, amp.TypeTaskDispatch)
	}
	ack := func(c *killCase, m amp.Message) {
		var res httpapi.SubmitResponse
		if code, resp := api.call("POST", "/v1/acks", httpapi.AckRequest{MsgID: m.MsgID, As: m.To}, &res); code != http.StatusAccepted {
			t.Fatalf("%s: ACK of %s answered %d %s", c.name, m.MsgID, code, resp)
		}
		c.ids = append(c.ids, res.MsgID)
	}
	result := func(c *killCase) amp.Message {
		m := pushed(gh, c.a, c.dispatch, "hello from "+c.id+"\n")
		c.sha = m.Result().CommitHash
		return m
	}
	send := func(c *killCase, m amp.Message) {
		if api.submit("/v1/messages", mustJSON(t, m)) {
			t.Errorf("%s: %s taken as a duplicate", c.name, m.MsgID)
		}
		c.ids = append(c.ids, m.MsgID)
	}
	review := func(c *killCase) {
		req := api.outboxMsg(c.id, amp.TypeReviewRequest)
		ack(c, req)
		send(c, c.a.verdict(req, amp.DecisionApproved))
		c.ids = append(c.ids, req.MsgID)
	}

	cases := []*killCase{{
		name:   "AfterDispatch",
		id:     "T-2026-811",
		before: approve,
		after: func(c *killCase) {
			if d := api.outboxMsg(c.id, amp.TypeTaskDispatch); d.MsgID != c.dispatch.MsgID {
				t.Errorf("%s: the outbox holds %s after the restart, want the dispatch %s of before", c.name, d.MsgID, c.dispatch.MsgID)
			}
			ack(c, c.dispatch)
			send(c, result(c))
			review(c)
		},
	}, {
		name: "AfterAck",
		id:   "T-2026-812",
		before: func(c *killCase) {
			approve(c)
			ack(c, c.dispatch)
			api.waitFor(c.id, "in_progress", 60*time.Second, func(st task.State) bool { return st.Underlying() == task.StatusInProgress })
		},
		after: func(c *killCase) {
			st := api.waitFor(c.id, "in_progress", 60*time.Second, func(st task.State) bool { return st.Underlying() == task.StatusInProgress })
			if len(st.Outbox) != 0 {
				t.Errorf("%s: outbox %v after the restart, want it empty: the dispatch was ACKed", c.name, st.Outbox)
			}
			send(c, result(c))
			review(c)
		},
	}, {
		name: "CIPolling",
		id:   "T-2026-813",
		before: func(c *killCase) {
			approve(c)
			ack(c, c.dispatch)
			m := result(c)
			setCheck(gh, c.sha, "")
			send(c, m)
			api.waitFor(c.id, "polling CI", 60*time.Second, func(st task.State) bool {
				return st.Underlying() == task.StatusCICheck && checkPolls(gh, c.sha) >= 2
			})
			c.polls = checkPolls(gh, c.sha)
		},
		after: func(c *killCase) {
			eventually(t, 120*time.Second, c.name+": CI polled again after the restart", func() (bool, error) {
				return checkPolls(gh, c.sha) > c.polls, nil
			})
			if st := api.state(c.id); st.Underlying() != task.StatusCICheck {
				t.Errorf("%s: %s while CI is pending, want %s", c.name, st.Status, task.StatusCICheck)
			}
			setCheck(gh, c.sha, "success")
			review(c)
		},
	}, {
		name: "DecisionOpen",
		id:   "T-2026-814",
		before: func(c *killCase) {
			c.decision = api.pending(c.id, task.KindPlanApproval, 60*time.Second).ID
		},
		after: func(c *killCase) {
			d := api.pending(c.id, task.KindPlanApproval, 60*time.Second)
			if d.ID != c.decision {
				t.Errorf("%s: open decision %s after the restart, want %s", c.name, d.ID, c.decision)
			}
			api.decide(d, decision.OptApprove)
			c.dispatch = api.outboxMsg(c.id, amp.TypeTaskDispatch)
			ack(c, c.dispatch)
			send(c, result(c))
			review(c)
		},
	}, {
		name: "CommandRunning",
		id:   "T-2026-815",
		before: func(c *killCase) {
			approve(c)
			eventually(t, 60*time.Second, c.name+": the agent command runs", func() (bool, error) {
				return len(agentRuns(agentDir, c.id)) > 0, nil
			})
		},
		after: func(c *killCase) {
			ackRec := amp.NewAck(amp.RoleExecutor, c.dispatch, time.Now())
			res := result(c)
			reply := string(mustJSON(t, ackRec)) + "\n" + string(mustJSON(t, res)) + "\n"
			tmp := filepath.Join(agentDir, c.id+".reply.tmp")
			writeFile(t, tmp, reply)
			if err := os.Rename(tmp, filepath.Join(agentDir, c.id+".reply")); err != nil {
				t.Fatal(err)
			}
			c.ids = append(c.ids, ackRec.MsgID, res.MsgID)
			// The killed worker's attempt is retried once its heartbeat
			// timeout (a minute) has passed.
			review(c)
			runs := agentRuns(agentDir, c.id)
			t.Logf("%s: the agent command ran %d times", c.name, len(runs))
			if len(runs) < 2 {
				t.Errorf("%s: the agent command ran %d times, want a run before the kill and one after", c.name, len(runs))
			}
			for _, id := range runs {
				if id != c.dispatch.MsgID {
					t.Errorf("%s: the agent command was given %s, want the dispatch %s of before the kill", c.name, id, c.dispatch.MsgID)
				}
			}
		},
	}}

	for _, c := range cases {
		c.a = &agent{t: t, repo: ghRepo(t)}
		if c.name == "CommandRunning" {
			writeFile(t, filepath.Join(agentDir, c.id+".wait"), "")
		}
		api.startTask(c.id, lowRiskPlan(c.a.repo))
	}
	for _, c := range cases {
		c.before(c)
		t.Logf("%s: %s brought to its point", c.name, c.id)
	}

	p.kill()
	p.restart()
	api.reset()
	restarted := time.Now()

	for _, c := range cases {
		c.after(c)
		t.Logf("%s: %s through review %s after the restart", c.name, c.id, time.Since(restarted).Round(time.Second))
	}
	for _, c := range cases {
		st := api.done(c.id, 90*time.Second)
		if st.Rounds != 1 {
			t.Errorf("%s: %d rounds, want 1: a crash must not dispatch again", c.name, st.Rounds)
		}
		ids := append([]string{c.dispatch.MsgID}, c.ids...)
		want := lifecycleRecords()
		want["decision"] = 2
		checkOnce(t, dataDir, st, want, ids...)
		if c.decision != "" && (len(st.Decided) != 1 || st.Decided[0].DecisionID != c.decision) {
			t.Errorf("%s: decided %+v, want only %s", c.name, st.Decided, c.decision)
		}
	}
}

// agentRuns lists the msg_ids the agent script was run with for a task.
func agentRuns(dir, taskID string) []string {
	b, _ := os.ReadFile(filepath.Join(dir, taskID+".runs"))
	return strings.Fields(string(b))
}
