package dashboard

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"math"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/ampflow/ampflow/activities/ssot"
	"github.com/ampflow/ampflow/amp/decision"
	"github.com/ampflow/ampflow/amp/task"
	"github.com/ampflow/ampflow/integrations/chat"
)

// maxDecisions bounds the decisions page; more are counted, not shown.
const maxDecisions = 5000

// decisionView is one open decision as a card, flattened so that a page
// of a thousand renders quickly.
type decisionView struct {
	ID, Subject, Kind, Prompt, Digest, DigestShort string
	// SubjectHref links the subject's page, when it has one.
	SubjectHref     string
	Raised, Expires timeView
	OnExpiry        string
	Context         []keyValue
	Issues          []string
	Blockers        []string
	Suggested       []string
	AgentStderr     string
	Escalation      string
	// Tool is what a tool_call decision asks; nil for other kinds.
	Tool            *toolView
	Given, Required int
	Progress        string
	// NoteNeeded names the options that need a note; empty when none does.
	NoteNeeded string
	Options    []optionView
	// Back is where the form returns to.
	Back string
}

type optionView struct {
	ID, Label, Class string
	NoteRequired     bool
}

type keyValue struct{ Key, Value string }

// timeView is a time as a <time> element shows it before the page's
// script puts it in the viewer's zone.
type timeView struct{ ISO, UTC string }

func newTimeView(t time.Time) timeView {
	if t.IsZero() {
		return timeView{}
	}
	return timeView{ISO: t.UTC().Format(time.RFC3339), UTC: t.UTC().Format("2006-01-02 15:04 UTC")}
}

func newDecisionView(d decision.Decision, back string) decisionView {
	p := d.Progress()
	v := decisionView{
		ID: d.ID, Subject: d.Subject, Kind: string(d.Kind), Prompt: chat.Prompt(d), Digest: d.Digest, DigestShort: d.Digest[:min(12, len(d.Digest))],
		Raised: newTimeView(d.RaisedAt), Expires: newTimeView(d.ExpiresAt), OnExpiry: d.OnExpiry,
		Blockers: d.Context.Blockers, Suggested: d.Context.Suggested, AgentStderr: d.Context.AgentStderr,
		Given: p.Given, Required: p.Required, Progress: p.String(), Back: back,
	}
	if strings.HasPrefix(d.Subject, "T-") || d.Context.Repo != "" {
		v.SubjectHref = "/tasks/" + d.Subject
	}
	var notes []string
	for _, o := range d.Options {
		ov := optionView{ID: o.ID, Label: o.Label, NoteRequired: o.NoteRequired}
		switch o.ID {
		case decision.OptApprove:
			ov.Class = "primary"
		case decision.OptReject:
			ov.Class = "danger"
		}
		v.Options = append(v.Options, ov)
		if o.NoteRequired {
			notes = append(notes, o.Label)
		}
	}
	v.NoteNeeded = strings.Join(notes, ", ")
	c := d.Context
	add := func(k, val string) {
		if val != "" {
			v.Context = append(v.Context, keyValue{k, val})
		}
	}
	add("Task", c.Description)
	if c.Repo != "" {
		repo := c.Repo
		if c.Branch != "" {
			repo += " · " + c.Branch
		}
		add("Repo", repo)
	}
	add("Risk", string(c.Risk))
	add("Subtask", c.Subtask)
	if c.Repo != "" {
		add("Rejects", strconv.Itoa(c.RejectCount))
	}
	add("CI", c.CIState)
	if c.Confidence != nil {
		add("Confidence", strconv.FormatFloat(*c.Confidence, 'f', 2, 64))
	}
	v.Tool = newToolView(d)
	extra := make([]keyValue, 0, len(c.Extra))
	for k, val := range c.Extra {
		if v.Tool != nil {
			break // the tool view shows them
		}
		extra = append(extra, keyValue{k, fmt.Sprint(val)})
	}
	sort.Slice(extra, func(i, j int) bool { return extra[i].Key < extra[j].Key })
	v.Context = append(v.Context, extra...)
	for _, is := range c.Issues {
		s := string(is.Severity) + ": " + is.File
		if is.Line > 0 {
			s += ":" + strconv.Itoa(is.Line)
		}
		s += " " + is.Description
		if is.SuggestedFix != "" {
			s += " — " + is.SuggestedFix
		}
		v.Issues = append(v.Issues, s)
	}
	if d.Escalation != nil {
		if b, err := json.MarshalIndent(d.Escalation, "", "  "); err == nil {
			v.Escalation = string(b)
		}
	}
	return v
}

type decisionsData struct {
	// Cards are the open decisions, rendered.
	Cards template.HTML
	Count int
	// More counts open decisions past maxDecisions.
	More int
}

// pendingRows reads the open decisions' rows, a page at a time, at most
// limit; more counts the rest.
func (s *Server) pendingRows(ctx context.Context, limit int) (rows []ssot.PendingDecision, more int, err error) {
	cursor := ""
	for {
		page, next, err := s.store.Pending(ctx, ssot.Page{Limit: ssot.MaxLimit, Cursor: cursor})
		if err != nil {
			return nil, 0, fmt.Errorf("reading the open decisions: %w", err)
		}
		for _, row := range page {
			if len(rows) >= limit {
				more++
				continue
			}
			rows = append(rows, row)
		}
		if next == "" {
			return rows, more, nil
		}
		cursor = next
	}
}

func decodePending(row ssot.PendingDecision) (decision.Decision, error) {
	var d decision.Decision
	if err := json.Unmarshal(row.Body, &d); err != nil {
		return d, fmt.Errorf("open decision %s: %w", row.ID, err)
	}
	if d.Subject == "" {
		d.Subject = row.Subject
	}
	return d, nil
}

// openDecisions reads and decodes every open decision.
func (s *Server) openDecisions(ctx context.Context) ([]decision.Decision, error) {
	rows, _, err := s.pendingRows(ctx, math.MaxInt)
	if err != nil {
		return nil, err
	}
	out := make([]decision.Decision, 0, len(rows))
	for _, row := range rows {
		d, err := decodePending(row)
		if err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	return out, nil
}

// decisionsPage is the landing page: every open decision of every
// workflow, oldest first. Cards come from the card cache unless their
// decision changed.
func (s *Server) decisionsPage(w http.ResponseWriter, r *http.Request, v viewer) {
	rows, more, err := s.pendingRows(r.Context(), maxDecisions)
	if err != nil {
		s.errorPage(w, r, v, http.StatusServiceUnavailable, err.Error())
		return
	}
	d := s.base(w, r, v, "Decisions", "decisions")
	who := "admin"
	if !v.Admin() {
		who = v.Name + "\x00" + string(v.Role)
	}
	card := cardData{Admin: v.Admin(), CSRF: s.cards.mark, Name: v.Name, Role: string(v.Role)}
	cards := make([][]byte, 0, len(rows))
	for _, row := range rows {
		k := cardKey{id: row.ID, back: "/", viewer: who}
		if h, ok := s.cards.get(k, row.Body); ok {
			cards = append(cards, h)
			continue
		}
		dec, err := decodePending(row)
		if err != nil {
			s.errorPage(w, r, v, http.StatusServiceUnavailable, err.Error())
			return
		}
		dv := newDecisionView(dec, "/")
		card.D = &dv
		var buf bytes.Buffer
		if err := s.pages["decisions"].ExecuteTemplate(&buf, "decision", card); err != nil {
			s.errorPage(w, r, v, http.StatusInternalServerError, "rendering decision "+row.ID+": "+err.Error())
			return
		}
		s.cards.put(k, row.Body, buf.Bytes())
		cards = append(cards, buf.Bytes())
	}
	d.Data = decisionsData{Cards: s.cards.assemble(cards, d.CSRF), Count: len(rows), More: more}
	s.render(w, r, http.StatusOK, "decisions", d)
}

// decide answers a decision as the page showed it: the digest sent is
// the one the form carried, and the subject's decision engine checks it,
// takes the first answer and counts a quorum.
func (s *Server) decide(w http.ResponseWriter, r *http.Request, v viewer) {
	id := r.PathValue("id")
	f := r.PostForm
	back := localPath(f.Get("back"), "/")
	option, note, digest := f.Get("option"), strings.TrimSpace(f.Get("note")), strings.ToLower(f.Get("digest"))
	if option == "" || digest == "" {
		http.Error(w, "option and digest are required", http.StatusBadRequest)
		return
	}
	d, open, err := s.findDecision(r.Context(), id)
	if err != nil {
		s.flashBack(w, r, back, err.Error())
		return
	}
	if !open {
		s.flashBack(w, r, back, s.closedMessage(r.Context(), id))
		return
	}
	if o, ok := d.Option(option); ok && o.NoteRequired && note == "" {
		s.flashBack(w, r, back, fmt.Sprintf("%q needs a note: say why in the note field.", o.Label))
		return
	}
	res, err := s.actions.Decide(r.Context(), d.Subject, decision.Answer{
		DecisionID: id, Option: option, Note: note, Digest: digest, By: v.Name, Channel: Channel,
	})
	if err != nil {
		msg := err.Error()
		var te *task.Error
		if errors.As(err, &te) {
			msg = te.Message
			if te.Code == task.CodeFinished {
				msg = s.closedMessage(r.Context(), id)
			}
		}
		s.flashBack(w, r, back, "Not taken: "+msg)
		return
	}
	s.log.Info("decision taken on the dashboard", "subject", d.Subject, "decision_id", id, "option", option, "by", v.Name)
	label := option
	if o, ok := d.Option(option); ok {
		label = o.Label
	}
	if res.Open() && res.Progress != nil {
		s.flashBack(w, r, back, fmt.Sprintf("Your approval of %s is counted: %s.", id, res.Progress.String()))
		return
	}
	s.flashBack(w, r, back, fmt.Sprintf("Decided %s: %s. The task is %s.", id, label, res.Status))
}

// findDecision finds a decision by id: open (from the store's open
// decisions, whose subject the answer goes to) or closed (from its record).
func (s *Server) findDecision(ctx context.Context, id string) (decision.Decision, bool, error) {
	ds, err := s.openDecisions(ctx)
	if err != nil {
		return decision.Decision{}, false, err
	}
	for _, d := range ds {
		if d.ID == id {
			return d, true, nil
		}
	}
	rec, err := s.store.Get(ctx, id)
	if err != nil {
		return decision.Decision{}, false, fmt.Errorf("decision %s is not open and has no record", id)
	}
	var d decision.Decision
	_ = json.Unmarshal(rec.Body, &d)
	return d, false, nil
}

// closedMessage says who closed a decision, from its outcome record.
func (s *Server) closedMessage(ctx context.Context, id string) string {
	e := s.closed(ctx, id, "")
	if e.By == "" {
		return fmt.Sprintf("Decision %s is closed.", id)
	}
	what := e.Label
	if what == "" {
		what = e.Option
	}
	return fmt.Sprintf("Decision %s was already decided by %s on %s at %s: %s.", id, e.By, e.Channel, e.At.UTC().Format(time.RFC3339), what)
}

// flashBack redirects to back with a message for the page.
func (s *Server) flashBack(w http.ResponseWriter, r *http.Request, back, msg string) {
	s.setFlash(w, r, msg)
	http.Redirect(w, r, back, http.StatusSeeOther)
}
