package dashboard

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"strconv"
	"strings"
	"sync"
)

// hubSize is how many events the hub keeps for reconnecting pages.
const hubSize = 4096

// subBuffer is how many events a slow page may fall behind before it is
// dropped; its browser reconnects and catches up from its last event id.
const subBuffer = 256

// Event types.
const (
	EventTask           = "task"            // a task's state changed: {task_id, status, previous}
	EventRecord         = "record"          // records were added to a chain: {task_id, seq}
	EventSubject        = "subject"         // another workflow saved its open decisions: {subject, rev}
	EventRefusal        = "refusal"         // input naming a task was refused: {task_id}
	EventMesh           = "mesh"            // a mesh event or a lease change was written: {seq}
	EventDecisionOpened = "decision-opened" // {id, subject}
	EventDecisionClosed = "decision-closed" // {id, subject, option, by, channel, at}
	// EventReset tells a page its last event id is unknown here (another
	// process, or too old): it reloads what it shows.
	EventReset = "reset"
)

// Event is one server-sent event.
type Event struct {
	ID   string
	Type string
	Data json.RawMessage
}

// hub fans the watcher's events out to the open pages and keeps the last
// hubSize of them for pages that reconnect. Ids are "epoch-n": a page
// that reconnects to another process, or after a restart, gets a reset.
type hub struct {
	mu    sync.Mutex
	epoch string
	n     uint64
	// ring holds event n at (n-1) % size.
	ring []Event
	size int
	subs map[*subscriber]struct{}
	// wake tells the watcher a page subscribed.
	wake chan struct{}
}

type subscriber struct {
	ch chan Event
}

func newHub(size int) *hub {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return &hub{epoch: hex.EncodeToString(b), size: size, ring: make([]Event, size), subs: map[*subscriber]struct{}{},
		wake: make(chan struct{}, 1)}
}

// publish sends an event of typ with v as its data to every subscriber.
func (h *hub) publish(typ string, v any) {
	data, err := json.Marshal(v)
	if err != nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.n++
	e := Event{ID: h.epoch + "-" + strconv.FormatUint(h.n, 10), Type: typ, Data: data}
	h.ring[(h.n-1)%uint64(h.size)] = e
	for s := range h.subs {
		select {
		case s.ch <- e:
		default:
			// Too far behind: the page reconnects and catches up.
			close(s.ch)
			delete(h.subs, s)
		}
	}
}

// subscribe registers a page. last is the Last-Event-ID it had: the
// events after it are returned to send first; reset is true when last is
// not an id this hub still holds.
func (h *hub) subscribe(last string) (s *subscriber, backlog []Event, reset bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	s = &subscriber{ch: make(chan Event, subBuffer)}
	h.subs[s] = struct{}{}
	select {
	case h.wake <- struct{}{}:
	default:
	}
	if last == "" {
		return s, nil, false
	}
	epoch, num, ok := strings.Cut(last, "-")
	n, err := strconv.ParseUint(num, 10, 64)
	if !ok || err != nil || epoch != h.epoch || n > h.n {
		return s, nil, true
	}
	if n == h.n {
		return s, nil, false
	}
	if h.n-n > uint64(h.size) {
		return s, nil, true
	}
	for i := n + 1; i <= h.n; i++ {
		backlog = append(backlog, h.ring[(i-1)%uint64(h.size)])
	}
	return s, backlog, false
}

func (h *hub) unsubscribe(s *subscriber) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.subs[s]; ok {
		delete(h.subs, s)
		close(s.ch)
	}
}

// lastID is the id of the newest event, empty before the first.
func (h *hub) lastID() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.n == 0 {
		return ""
	}
	return h.epoch + "-" + strconv.FormatUint(h.n, 10)
}

// closeAll ends every subscription: the event streams answer and close,
// so a server shutting down is not held by open pages.
func (h *hub) closeAll() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for s := range h.subs {
		close(s.ch)
		delete(h.subs, s)
	}
}

// watched reports whether any page is subscribed.
func (h *hub) watched() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.subs) > 0
}
