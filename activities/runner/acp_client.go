package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	acp "github.com/coder/acp-go-sdk"
)

// acpClient is ampflow's side of an ACP connection: it passes the agent's
// session updates and permission requests to the run's loop, and decides
// permission requests by Spec.Permission. It offers the agent no file
// system and no terminal of its own: the agent uses its own tools, in
// the run's sandbox, asking before those it asks about.
type acpClient struct {
	spec Spec
	// asks is canceled when the run stops: an open permission request is
	// then answered "cancelled", as ACP asks of a cancelled turn.
	asks   context.Context
	msgs   chan<- acpMsg
	closed <-chan struct{} // the loop is gone
	// replay is set while session/load replays the session's history,
	// which is not this run's.
	replay atomic.Bool
	// lastUpdate is when the last session/update came (UnixNano).
	lastUpdate atomic.Int64

	mu      sync.Mutex
	denials []string // denied calls' lines for the model, since the last turn
}

// acpMsg is what the connection's goroutines tell the run's loop.
type acpMsg struct {
	update *acp.SessionUpdate
	replay bool
	asked  bool               // a permission request came or was answered
	perm   *PermissionRequest // the request that came
	step   *acpStep
}

// acpStep is a step of the protocol the driver took.
type acpStep struct {
	session string
	resp    *acp.PromptResponse
	last    bool // resp is the run's last turn
	err     error
	done    bool // the driver is finished
}

func (c *acpClient) send(m acpMsg) {
	select {
	case c.msgs <- m:
	case <-c.closed:
	}
}

// SessionUpdate passes an update to the loop.
func (c *acpClient) SessionUpdate(_ context.Context, n acp.SessionNotification) error {
	u := n.Update
	c.lastUpdate.Store(time.Now().UnixNano())
	c.send(acpMsg{update: &u, replay: c.replay.Load()})
	return nil
}

// RequestPermission decides a tool call by Spec.Permission: allow selects
// the agent's allow_once option, deny its reject_once, each falling back
// to the lasting option when that is all the agent offers. A request
// still open when the run stops, or one the agent offers no option for,
// is answered "cancelled".
func (c *acpClient) RequestPermission(ctx context.Context, p acp.RequestPermissionRequest) (acp.RequestPermissionResponse, error) {
	cancelled := acp.RequestPermissionResponse{Outcome: acp.RequestPermissionOutcome{Cancelled: &acp.RequestPermissionOutcomeCancelled{}}}
	req := permissionRequest(p)
	c.send(acpMsg{asked: true, perm: &req})
	defer c.send(acpMsg{asked: true})
	ans := PermissionAnswer{Allow: true}
	if c.spec.Permission != nil {
		ask, stop := context.WithCancel(c.asks)
		defer stop()
		go func() {
			select {
			case <-ctx.Done(): // the agent withdrew the request
				stop()
			case <-ask.Done():
			}
		}()
		ans = c.spec.Permission(ask, req)
		if ask.Err() != nil {
			return cancelled, nil
		}
	}
	id, ok := selectOption(p.Options, ans.Allow)
	if !ok {
		return cancelled, nil
	}
	if !ans.Allow {
		c.mu.Lock()
		what := req.Title
		if what == "" {
			what = req.Tool + " " + string(req.Input)
		}
		c.denials = append(c.denials, fmt.Sprintf("- %s: %s", clip(strings.Join(strings.Fields(what), " ")), strings.TrimSpace(ans.Reason)))
		c.mu.Unlock()
	}
	return acp.RequestPermissionResponse{Outcome: acp.RequestPermissionOutcome{
		Selected: &acp.RequestPermissionOutcomeSelected{OptionId: id}}}, nil
}

// takeDenials returns the denials since the last call.
func (c *acpClient) takeDenials() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	d := c.denials
	c.denials = nil
	return d
}

var errNotOffered = errors.New("ampflow offers no client file system or terminal: use your own tools")

// ReadTextFile is not offered (no fs capability).
func (*acpClient) ReadTextFile(context.Context, acp.ReadTextFileRequest) (acp.ReadTextFileResponse, error) {
	return acp.ReadTextFileResponse{}, errNotOffered
}

// WriteTextFile is not offered (no fs capability).
func (*acpClient) WriteTextFile(context.Context, acp.WriteTextFileRequest) (acp.WriteTextFileResponse, error) {
	return acp.WriteTextFileResponse{}, errNotOffered
}

// CreateTerminal is not offered (no terminal capability).
func (*acpClient) CreateTerminal(context.Context, acp.CreateTerminalRequest) (acp.CreateTerminalResponse, error) {
	return acp.CreateTerminalResponse{}, errNotOffered
}

// KillTerminal is not offered.
func (*acpClient) KillTerminal(context.Context, acp.KillTerminalRequest) (acp.KillTerminalResponse, error) {
	return acp.KillTerminalResponse{}, errNotOffered
}

// TerminalOutput is not offered.
func (*acpClient) TerminalOutput(context.Context, acp.TerminalOutputRequest) (acp.TerminalOutputResponse, error) {
	return acp.TerminalOutputResponse{}, errNotOffered
}

// ReleaseTerminal is not offered.
func (*acpClient) ReleaseTerminal(context.Context, acp.ReleaseTerminalRequest) (acp.ReleaseTerminalResponse, error) {
	return acp.ReleaseTerminalResponse{}, errNotOffered
}

// WaitForTerminalExit is not offered.
func (*acpClient) WaitForTerminalExit(context.Context, acp.WaitForTerminalExitRequest) (acp.WaitForTerminalExitResponse, error) {
	return acp.WaitForTerminalExitResponse{}, errNotOffered
}

// maxDenialTurns bounds the turns a run spends telling the model of the
// calls it was refused.
const maxDenialTurns = 3

// drive takes the run through the protocol: initialize, a new session or
// the loaded one, the model, the prompt, and a turn for the reasons of
// denied calls after each turn that had some. It tells the loop each
// step and stops at the first error.
func (c *acpClient) drive(ctx context.Context, conn *acp.ClientSideConnection) {
	defer c.send(acpMsg{step: &acpStep{done: true}})
	fail := func(what string, err error) {
		c.send(acpMsg{step: &acpStep{err: fmt.Errorf("ACP %s: %w", what, err)}})
	}
	s := c.spec
	init, err := conn.Initialize(ctx, acp.InitializeRequest{ProtocolVersion: acp.ProtocolVersionNumber,
		ClientInfo: &acp.Implementation{Name: "ampflow", Version: "1"}})
	if err != nil {
		fail("initialize", err)
		return
	}
	if init.ProtocolVersion != acp.ProtocolVersionNumber {
		fail("initialize", fmt.Errorf("the agent speaks protocol version %d, ampflow %d", init.ProtocolVersion, acp.ProtocolVersionNumber))
		return
	}
	servers, err := acpServers(s.MCPServers, init.AgentCapabilities.McpCapabilities)
	if err != nil {
		fail("session/new", err)
		return
	}
	session := s.SessionID
	var opts []acp.SessionConfigOption
	var models *acp.SessionModelState
	var modes *acp.SessionModeState
	if session != "" {
		if !init.AgentCapabilities.LoadSession {
			fail("session/load", errors.New("the agent cannot load a session (agentCapabilities.loadSession is false)"))
			return
		}
		awaitSessionMinute(ctx, init.AgentInfo, s.Env, session)
		// Until the prompt goes, what the agent sends is the session's
		// history: some agents replay it after their response.
		c.replay.Store(true)
		resp, err := conn.LoadSession(ctx, acp.LoadSessionRequest{SessionId: acp.SessionId(session), Cwd: s.Dir, McpServers: servers, Meta: sessionMeta()})
		if err != nil {
			fail("session/load "+session, err)
			return
		}
		opts, models, modes = resp.ConfigOptions, resp.Models, resp.Modes
		c.settle(ctx)
	} else {
		resp, err := conn.NewSession(ctx, acp.NewSessionRequest{Cwd: s.Dir, McpServers: servers, Meta: sessionMeta()})
		if err != nil {
			fail("session/new", err)
			return
		}
		session, opts, models, modes = string(resp.SessionId), resp.ConfigOptions, resp.Models, resp.Modes
	}
	if err := askingMode(ctx, conn, session, modes); err != nil {
		fail("session/set_mode", err)
		return
	}
	c.send(acpMsg{step: &acpStep{session: session}})
	if s.Model != "" {
		if err := setModel(ctx, conn, session, s.Model, opts, models); err != nil {
			fail("setting the model", err)
			return
		}
	}
	prompt := withSystem(s.SystemPrompt, s.Prompt)
	c.replay.Store(false)
	for turn := 0; ; turn++ {
		resp, err := conn.Prompt(ctx, acp.PromptRequest{SessionId: acp.SessionId(session), Prompt: []acp.ContentBlock{acp.TextBlock(prompt)}})
		if err != nil {
			fail("session/prompt", err)
			return
		}
		denied := c.takeDenials()
		last := len(denied) == 0 || resp.StopReason != acp.StopReasonEndTurn || turn == maxDenialTurns || c.asks.Err() != nil
		c.send(acpMsg{step: &acpStep{resp: &resp, last: last}})
		if last {
			return
		}
		prompt = denialPrompt(denied)
	}
}

// sessionMeta is the _meta of session/new and session/load: it turns off
// claude-agent-acp's prompt suggestions. After each turn the adapter asks
// the model, with the session's tools, to guess the user's next message;
// ampflow has no user to show it to, so that request would only cost a
// model call per turn (and, racing the agent's exit, one more after the
// last). Other agents ignore a _meta they do not know, as ACP asks.
func sessionMeta() map[string]any {
	return map[string]any{"claudeCode": map[string]any{"options": map[string]any{"promptSuggestions": false}}}
}

// settle waits, after session/load, until the agent has sent no update
// for replayQuiet (at most replayWait): Gemini CLI replays the history
// after its response, and that replay is not this run's.
func (c *acpClient) settle(ctx context.Context) {
	deadline := time.Now().Add(replayWait)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		quiet := time.Since(time.Unix(0, c.lastUpdate.Load()))
		if quiet >= replayQuiet {
			return
		}
		time.Sleep(replayQuiet - quiet)
	}
}

const (
	replayQuiet = 500 * time.Millisecond
	replayWait  = 10 * time.Second
)

// denialPrompt tells the model why its calls were refused: ACP's
// rejection carries no text, so the agent told it only that they were.
func denialPrompt(denied []string) string {
	return "ampflow: these tool calls of yours were denied:\n" + strings.Join(denied, "\n") +
		"\nDo not make them again; carry on with the task without them and end with your report as asked."
}

// acpServers are servers for session/new: over HTTP, which the agent must
// support (mcpCapabilities.http).
func acpServers(servers []MCPServer, caps acp.McpCapabilities) ([]acp.McpServer, error) {
	out := []acp.McpServer{}
	for _, s := range servers {
		if !caps.Http {
			return nil, fmt.Errorf("the agent takes no MCP server over HTTP (mcpCapabilities.http), which %s is", s.Name)
		}
		h := []acp.HttpHeader{}
		for _, k := range sortedKeys(s.Headers) {
			h = append(h, acp.HttpHeader{Name: k, Value: s.Headers[k]})
		}
		out = append(out, acp.McpServer{Http: &acp.McpServerHttpInline{Name: s.Name, Url: s.URL, Headers: h, Type: "http"}})
	}
	return out, nil
}

func sortedKeys(m map[string]string) []string {
	var k []string
	for x := range m {
		k = append(k, x)
	}
	sort.Strings(k)
	return k
}

// selfDeciding are the session modes of the tested agents that decide
// tool calls themselves rather than ask: Claude Code's (auto asks a
// server-side classifier, which a proxy or a fake does not pass), Gemini
// CLI's.
var selfDeciding = map[string]bool{"auto": true, "bypassPermissions": true, "acceptEdits": true, "dontAsk": true, "yolo": true, "autoEdit": true}

// askingMode puts a session whose mode decides tool calls by itself in
// the agent's mode named "default" (Claude Code's Manual, Gemini CLI's
// Default: both ask before an edit or a command), so its permission
// requests reach the tool policy.
func askingMode(ctx context.Context, conn *acp.ClientSideConnection, session string, modes *acp.SessionModeState) error {
	if modes == nil || !selfDeciding[string(modes.CurrentModeId)] {
		return nil
	}
	for _, m := range modes.AvailableModes {
		if m.Id == "default" {
			_, err := conn.SetSessionMode(ctx, acp.SetSessionModeRequest{SessionId: acp.SessionId(session), ModeId: m.Id})
			return err
		}
	}
	return nil
}

// setModel picks the session's model: by its config option of the model
// category, else by session/set_model.
func setModel(ctx context.Context, conn *acp.ClientSideConnection, session, model string, opts []acp.SessionConfigOption, models *acp.SessionModelState) error {
	for _, o := range opts {
		if o.Select == nil || (o.Select.Id != "model" && (o.Select.Category == nil || *o.Select.Category != acp.SessionConfigOptionCategoryModel)) {
			continue
		}
		_, err := conn.SetSessionConfigOption(ctx, acp.SetSessionConfigOptionRequest{ValueId: &acp.SetSessionConfigOptionValueId{
			SessionId: acp.SessionId(session), ConfigId: o.Select.Id, Value: acp.SessionConfigValueId(model)}})
		return err
	}
	if models != nil {
		_, err := conn.UnstableSetSessionModel(ctx, acp.UnstableSetSessionModelRequest{SessionId: acp.SessionId(session), ModelId: acp.UnstableModelId(model)})
		return err
	}
	return fmt.Errorf("the agent offers no choice of model; give %q on its command line instead", model)
}

// lineTee passes the agent's output to the connection, telling the loop
// of each line (activity) and, when a test taps streams, handing it the
// lines.
type lineTee struct {
	r        io.Reader
	activity chan<- struct{}
	partial  []byte
}

func (t *lineTee) Read(p []byte) (int, error) {
	n, err := t.r.Read(p)
	if n > 0 {
		select {
		case t.activity <- struct{}{}:
		default:
		}
		if tap != nil {
			t.partial = append(t.partial, p[:n]...)
			for {
				i := strings.IndexByte(string(t.partial), '\n')
				if i < 0 {
					break
				}
				if line := trimSpace(t.partial[:i]); len(line) > 0 {
					tap(append([]byte(nil), line...))
				}
				t.partial = t.partial[i+1:]
			}
		}
	}
	return n, err
}
