package runner

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ampflow/ampflow/activities/runner/fakemodel"
)

// turnScript stands in for Claude Code on stream-json input: it copies
// each input line to $LOG and echoes it as taken, answers the prompt once
// $GATE exists, answers every later turn, and exits when its input
// closes.
const turnScript = `read -r l; echo "$l" >> "$LOG"
echo '` + initLine + `'; echo "$l"
while [ ! -f "$GATE" ]; do sleep 0.02; done
echo '` + resultLine + `'
while read -r l; do echo "$l" >> "$LOG"; echo "$l"; echo '` + resultLine + `'; done
exit 0`

func TestRunTakesMessages(t *testing.T) {
	dir := t.TempDir()
	log, gate := filepath.Join(dir, "log"), filepath.Join(dir, "gate")
	s := scriptSpec(t, turnScript)
	s.Env = append(s.Env, "LOG="+log, "GATE="+gate)
	s.Prompt = "the prompt"
	msgs := make(chan Message)
	s.Messages = msgs
	taken := make(chan bool, 1)
	go func() {
		msgs <- Message{Text: "a word from the admin", Taken: taken}
		if <-taken {
			os.WriteFile(gate, nil, 0o644)
		}
	}()
	o := runScript(t, context.Background(), s, nil)
	if !o.Succeeded() {
		t.Fatalf("outcome %+v", o)
	}
	// Two turns, two results of 0.5 each: the run's cost is their sum.
	if o.Usage.CostUSD != 1 || o.Usage.InputTokens != 14 {
		t.Errorf("usage %+v, want both turns' results summed", o.Usage)
	}
	b, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	var texts []string
	for _, l := range lines {
		var turn struct {
			Type    string
			Message struct {
				Role    string
				Content []struct{ Type, Text string }
			}
		}
		if err := json.Unmarshal([]byte(l), &turn); err != nil || turn.Type != "user" || turn.Message.Role != "user" || len(turn.Message.Content) != 1 {
			t.Fatalf("input line %q is not a user turn (%v)", l, err)
		}
		texts = append(texts, turn.Message.Content[0].Text)
	}
	if strings.Join(texts, "|") != "the prompt|a word from the admin" {
		t.Errorf("turns %q", texts)
	}
}

func TestRunRefusesMessagesAfterItsResult(t *testing.T) {
	// The CLI answers its prompt and exits: a message that comes after
	// is not taken (the caller queues it for the next run).
	s := scriptSpec(t, `read -r l; echo '`+initLine+`'; echo "$l"; echo '`+resultLine+`'; read -r l; sleep 0.3; exit 0`)
	msgs := make(chan Message)
	s.Messages = msgs
	taken := make(chan bool, 1)
	done, result := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		<-result
		select {
		case msgs <- Message{Text: "late", Taken: taken}:
		case <-time.After(5 * time.Second):
			taken <- false
		}
	}()
	var results int
	o := runScript(t, context.Background(), s, func(e Event) {
		if e.Kind == EventResult {
			results++
			close(result)
		}
	})
	<-done
	if !o.Succeeded() || results != 1 {
		t.Fatalf("outcome %+v, %d results", o, results)
	}
	if <-taken {
		t.Error("a message after the last result was taken")
	}
}

// TestClaudeTakesMessage sends a user turn to the real Claude Code while
// its model is still answering the prompt: the model's next request has
// it, and the CLI exits by itself after the turn's result.
func TestClaudeTakesMessage(t *testing.T) {
	release := make(chan struct{})
	fake := fakemodel.New(
		fakemodel.Turn{Text: "working on it", Hold: release},
		fakemodel.Turn{Text: "noted"},
	)
	testClaudeTakesMessage(t, fake, release, 2)
}

// TestClaudeFoldsMessage sends the message while the model's answer is a
// tool call: Claude Code hands it to the model with the tool's result, in
// the same turn, which has one result; the run still ends.
func TestClaudeFoldsMessage(t *testing.T) {
	release := make(chan struct{})
	fake := fakemodel.New(
		fakemodel.Turn{Tool: &fakemodel.ToolCall{Name: "Bash", Input: map[string]any{"command": "echo one", "description": "Say one"}}, Hold: release},
		fakemodel.Turn{Text: "noted"},
	)
	testClaudeTakesMessage(t, fake, release, 2)
}

// testClaudeTakesMessage runs Claude Code on PROMPT-ONE and sends
// MESSAGE-TWO once the model's first request is held; the model must see
// it in its second request, of n.
func testClaudeTakesMessage(t *testing.T, fake *fakemodel.Server, release chan struct{}, n int) {
	t.Cleanup(fake.Close)
	s := claudeCase.spec(t, fake)
	s.Dir, s.Prompt = newRepo(t), "PROMPT-ONE"
	s.FirstEventTimeout, s.IdleTimeout = 2*time.Minute, 2*time.Minute
	msgs := make(chan Message)
	s.Messages = msgs
	taken := make(chan bool, 1)
	go func() {
		<-fake.Changed() // the prompt's request
		msgs <- Message{Text: "MESSAGE-TWO", Taken: taken}
		<-taken
		close(release)
	}()
	o, err := Run(context.Background(), s, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !o.Succeeded() || o.Text != "noted" {
		t.Fatalf("outcome %+v", o)
	}
	reqs := fake.AgentRequests()
	if len(reqs) != n || reqs[0].Text("MESSAGE-TWO") || !reqs[1].Text("MESSAGE-TWO") || !reqs[1].Text("PROMPT-ONE") {
		t.Fatalf("%d agent requests; want the message in the second, with the prompt's turn", len(reqs))
	}
}
