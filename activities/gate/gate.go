package gate

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/ampflow/ampflow/activities"
	"github.com/ampflow/ampflow/activities/ssot"
	"github.com/ampflow/ampflow/amp"
)

// Gates is what the gate's activities write in the SSOT (*ssot.DB).
type Gates interface {
	Append(ctx context.Context, subject string, entries []ssot.Entry) (ssot.AppendResult, error)
	InsertGate(ctx context.Context, g ssot.GateRow) (ssot.GateRow, bool, error)
	SaveDecisions(ctx context.Context, subject string, rev int64, ds []ssot.PendingDecision) error
	ResolveGate(ctx context.Context, gateID, status, by string, at time.Time) error
	SetGateCallback(ctx context.Context, gateID, callback string) error
	AddGateAttempt(ctx context.Context, a ssot.GateAttempt) error
}

// Gate carries the dependencies of the action gate's activities.
type Gate struct {
	Store Gates
	// Secret is gate.webhook_secret, the master secret each agent's
	// callbacks are signed from (CallbackSecret); empty sends them
	// unsigned.
	Secret string
	// Allowed says whether a callback may go to host and port
	// (gate.webhook_allow), private saying the host resolves to a
	// private or loopback address (PrivateAddr); checked again at each
	// attempt, after resolving, and the connection made to the addresses
	// checked. Nil allows none.
	Allowed func(host, port string, private bool) bool
	// Resolve looks a host up; nil is net.DefaultResolver.
	Resolve func(ctx context.Context, host string) ([]netip.Addr, error)
	HTTP    *http.Client
	Log     *slog.Logger
	Now     func() time.Time
	// Resolved, when set, is told each resolution (a metric).
	Resolved func(status string)
}

// GateOpenInput is a gate's row, written unless the intake wrote it.
type GateOpenInput struct {
	Row ssot.GateRow `json:"row"`
}

// GateOpen stores a gate's row so its status is readable by gate id; a
// row stored already (a signal's, or a retry) is kept.
func (g *Gate) GateOpen(ctx context.Context, in GateOpenInput) error {
	_, _, err := g.Store.InsertGate(ctx, in.Row)
	return final(err)
}

// ErrGateInvalid refuses gate input the store will never take.
const ErrGateInvalid = "GateInvalid"

// final makes an invalid input a non-retryable failure: retrying it
// would never succeed.
func final(err error) error {
	var inv *ssot.InvalidError
	if errors.As(err, &inv) {
		return temporal.NewNonRetryableApplicationError(err.Error(), ErrGateInvalid, err)
	}
	return err
}

// GateRecordInput is SSOT records of one gate.
type GateRecordInput struct {
	// Subject is the gate's workflow id: its chain in the SSOT.
	Subject string                   `json:"subject"`
	Entries []activities.RecordEntry `json:"entries"`
}

// GateRecord appends records to a gate's chain; a retry keeps what was
// stored.
func (g *Gate) GateRecord(ctx context.Context, in GateRecordInput) error {
	_, err := g.Store.Append(ctx, in.Subject, activities.StoreEntries(in.Entries))
	return final(err)
}

// GateDecisionsInput is the open decisions of a gate, in their Rev'th
// save.
type GateDecisionsInput struct {
	Subject   string                 `json:"subject"`
	Rev       int64                  `json:"rev"`
	Decisions []ssot.PendingDecision `json:"decisions"`
}

// GateDecisions lists a gate's open decisions with every other.
func (g *Gate) GateDecisions(ctx context.Context, in GateDecisionsInput) error {
	return final(g.Store.SaveDecisions(ctx, in.Subject, in.Rev, in.Decisions))
}

// GateResolveInput is a gate's resolution.
type GateResolveInput struct {
	GateID string    `json:"gate_id"`
	Status string    `json:"status"`
	By     string    `json:"by"`
	At     time.Time `json:"at"`
}

// GateResolve records a gate's resolution where GET /v1/gates reads it.
func (g *Gate) GateResolve(ctx context.Context, in GateResolveInput) error {
	if err := g.Store.ResolveGate(ctx, in.GateID, in.Status, in.By, in.At); err != nil {
		return err
	}
	if g.Resolved != nil {
		g.Resolved(in.Status)
	}
	return nil
}

// GateCallbackStateInput is where a gate's callback stands.
type GateCallbackStateInput struct {
	GateID   string `json:"gate_id"`
	Callback string `json:"callback"`
}

// GateCallbackState records where a gate's callback stands.
func (g *Gate) GateCallbackState(ctx context.Context, in GateCallbackStateInput) error {
	return g.Store.SetGateCallback(ctx, in.GateID, in.Callback)
}

// GateCallbackInput is one attempt to post a resolution.
type GateCallbackInput struct {
	GateID  string          `json:"gate_id"`
	Attempt int             `json:"attempt"`
	URL     string          `json:"url"`
	Body    json.RawMessage `json:"body"`
	// AgentID and RunID are the recipient, whose secret signs the
	// callback and whom its signature names (CallbackSignature).
	AgentID string `json:"agent_id"`
	RunID   string `json:"run_id"`
}

// GateCallbackResult says how an attempt went. Final says a retry is
// pointless (a 4xx answer, a host no longer allowed).
type GateCallbackResult struct {
	Delivered  bool   `json:"delivered"`
	Final      bool   `json:"final,omitempty"`
	StatusCode int    `json:"status_code,omitempty"`
	Error      string `json:"error,omitempty"`
}

// GateCallback posts a resolution once, signed, and records the attempt.
// The workflow retries with its own backoff, so each attempt is one
// activity and one record.
func (g *Gate) GateCallback(ctx context.Context, in GateCallbackInput) (GateCallbackResult, error) {
	res := g.post(ctx, in)
	a := ssot.GateAttempt{GateID: in.GateID, Attempt: in.Attempt, At: g.now(), StatusCode: res.StatusCode, Error: res.Error}
	if err := g.Store.AddGateAttempt(ctx, a); err != nil {
		g.log().Error("recording a callback attempt", "gate", in.GateID, "attempt", in.Attempt, "err", err)
	}
	g.log().Info("gate callback", "gate", in.GateID, "attempt", in.Attempt, "delivered", res.Delivered, "status", res.StatusCode, "err", res.Error)
	return res, nil
}

func (g *Gate) post(ctx context.Context, in GateCallbackInput) GateCallbackResult {
	u, err := url.Parse(in.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
		return GateCallbackResult{Final: true, Error: "webhook_url is not an http(s) URL"}
	}
	host, port := u.Hostname(), u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
	}
	addrs, err := g.resolve(ctx, host)
	if err != nil {
		return GateCallbackResult{Error: fmt.Sprintf("resolving %s: %v", host, err)}
	}
	private := false
	for _, a := range addrs {
		private = private || PrivateAddr(a)
	}
	if g.Allowed == nil || !g.Allowed(host, port, private) {
		if private {
			return GateCallbackResult{Final: true, Error: "host " + host + " is a private or loopback address and gate.webhook_allow does not name it with port " + port}
		}
		return GateCallbackResult{Final: true, Error: "host " + host + " is not in gate.webhook_allow"}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, in.URL, bytes.NewReader(in.Body))
	if err != nil {
		return GateCallbackResult{Final: true, Error: err.Error()}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-AMP-Gate-Id", in.GateID)
	if g.Secret != "" {
		ts := strconv.FormatInt(g.now().Unix(), 10)
		req.Header.Set(amp.HeaderTimestamp, ts)
		req.Header.Set(amp.HeaderSignature,
			CallbackSignature(CallbackSecret(g.Secret, in.AgentID), ts, in.AgentID, in.RunID, in.URL, in.Body))
	}
	hc := g.HTTP
	if hc == nil {
		hc = &http.Client{Timeout: 30 * time.Second}
	}
	// A redirect could lead anywhere, past gate.webhook_allow.
	noRedirect := *hc
	noRedirect.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	// Connect to the addresses checked, so a name that resolves
	// elsewhere a moment later cannot get round the check.
	noRedirect.Transport = pinned(hc.Transport, addrs, port)
	resp, err := noRedirect.Do(req)
	if err != nil {
		if activity.IsActivity(ctx) && errors.Is(ctx.Err(), context.Canceled) {
			return GateCallbackResult{Error: "cancelled"}
		}
		return GateCallbackResult{Error: err.Error()}
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	out := GateCallbackResult{StatusCode: resp.StatusCode}
	switch {
	case resp.StatusCode < 300:
		out.Delivered = true
	case resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusRequestTimeout || resp.StatusCode >= 500:
		out.Error = resp.Status
	default:
		out.Final, out.Error = true, fmt.Sprintf("%s (not retried)", resp.Status)
	}
	return out
}

func (g *Gate) resolve(ctx context.Context, host string) ([]netip.Addr, error) {
	if a, err := netip.ParseAddr(host); err == nil {
		return []netip.Addr{a}, nil
	}
	if g.Resolve != nil {
		return g.Resolve(ctx, host)
	}
	return net.DefaultResolver.LookupNetIP(ctx, "ip", host)
}

// pinned is rt (http.DefaultTransport when nil) dialling only addrs.
func pinned(rt http.RoundTripper, addrs []netip.Addr, port string) http.RoundTripper {
	if rt == nil {
		rt = http.DefaultTransport
	}
	t, ok := rt.(*http.Transport)
	if !ok {
		return rt
	}
	t = t.Clone()
	t.Proxy = nil
	var d net.Dialer
	t.DialContext = func(ctx context.Context, network, _ string) (net.Conn, error) {
		var last error
		for _, a := range addrs {
			c, err := d.DialContext(ctx, network, net.JoinHostPort(a.String(), port))
			if err == nil {
				return c, nil
			}
			last = err
		}
		if last == nil {
			last = errors.New("no address")
		}
		return nil, last
	}
	return t
}

// PrivateAddr says whether a is loopback, private (RFC 1918, RFC 4193),
// link-local, shared (RFC 6598), unspecified or multicast: what a callback
// reaches only when gate.webhook_allow names it with its port.
func PrivateAddr(a netip.Addr) bool {
	a = a.Unmap()
	return a.IsLoopback() || a.IsPrivate() || a.IsLinkLocalUnicast() || a.IsLinkLocalMulticast() ||
		a.IsUnspecified() || a.IsMulticast() || a.IsInterfaceLocalMulticast() || shared.Contains(a)
}

var shared = netip.MustParsePrefix("100.64.0.0/10")

func (g *Gate) now() time.Time {
	if g.Now != nil {
		return g.Now()
	}
	return time.Now()
}

func (g *Gate) log() *slog.Logger {
	if g.Log != nil {
		return g.Log
	}
	return slog.Default()
}
