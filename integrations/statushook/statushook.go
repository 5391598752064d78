// Package statushook sends every notice of every task (its decisions, and
// its status changes with notify.status_updates) to the operators' own
// webhooks as JSON, signed as ampflow signs deliveries to webhook agents,
// so a team's tooling follows tasks without polling.
package statushook

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/ampflow/ampflow/activities/notify"
	"github.com/ampflow/ampflow/amp"
)

// HeaderNotice carries a delivery's id: the same notice sent again (a
// retry, a restart) has the same id, for the receiver to drop.
const HeaderNotice = "X-Ampflow-Notice"

// Hook is one endpoint and its secret.
type Hook struct {
	URL    string
	Secret []byte
}

// Delivery is the body of a POST: the notice and its id.
type Delivery struct {
	ID string `json:"id"`
	notify.Input
}

// Notifier posts notices to its hooks. It is a notify.Notifier.
type Notifier struct {
	Hooks []Hook
	// Client is the transport; nil is a client with a 10 s timeout.
	Client *http.Client
	// Now is the clock of the signatures; nil is time.Now.
	Now func() time.Time

	mu   sync.Mutex
	sent map[string]bool
}

// maxSent bounds the deliveries remembered as sent; past it they are
// forgotten and a retry may send one again, with its id.
const maxSent = 10000

var _ notify.Notifier = (*Notifier)(nil)

// Notify posts in to each hook that has not taken it yet; a hook that
// refuses it fails the notice, which is retried for all (the others skip
// it then).
func (n *Notifier) Notify(ctx context.Context, in notify.Input) error {
	raw, err := json.Marshal(in)
	if err != nil {
		return fmt.Errorf("encoding the notice of %s: %w", in.TaskID, err)
	}
	sum := sha256.Sum256(raw)
	id := hex.EncodeToString(sum[:16])
	body, err := json.Marshal(Delivery{ID: id, Input: in})
	if err != nil {
		return fmt.Errorf("encoding the notice of %s: %w", in.TaskID, err)
	}
	for _, h := range n.Hooks {
		if n.wasSent(h.URL, id) {
			continue
		}
		if err := n.post(ctx, h, id, body); err != nil {
			return fmt.Errorf("posting the %s notice of %s to %s: %w", in.Event, in.TaskID, h.URL, err)
		}
		n.markSent(h.URL, id)
	}
	return nil
}

func (n *Notifier) post(ctx context.Context, h Hook, id string, body []byte) error {
	now := time.Now
	if n.Now != nil {
		now = n.Now
	}
	ts := strconv.FormatInt(now().Unix(), 10)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, h.URL, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(amp.HeaderTimestamp, ts)
	req.Header.Set(amp.HeaderSignature, amp.WebhookSignature(string(h.Secret), ts, body))
	req.Header.Set(HeaderNotice, id)
	c := n.Client
	if c == nil {
		c = &http.Client{Timeout: 10 * time.Second}
	}
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("answered %s", resp.Status)
	}
	return nil
}

func (n *Notifier) wasSent(url, id string) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.sent[url+" "+id]
}

func (n *Notifier) markSent(url, id string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.sent == nil || len(n.sent) >= maxSent {
		n.sent = map[string]bool{}
	}
	n.sent[url+" "+id] = true
}
