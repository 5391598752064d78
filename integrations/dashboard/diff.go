package dashboard

import (
	"errors"
	"net/http"
	"strings"

	"github.com/ampflow/ampflow/activities/ssot"
)

// diffLine is one line of a kept diff, classed for colour.
type diffLine struct {
	Class, Text string
}

type diffData struct {
	TaskID, MsgID string
	Lines         []diffLine
}

// diffPage shows the diff git gave for a result, as kept for its review.
func (s *Server) diffPage(w http.ResponseWriter, r *http.Request, v viewer) {
	id, msg := r.PathValue("id"), r.PathValue("msg")
	b, err := s.store.File(r.Context(), id, ssot.DiffName(msg))
	if errors.Is(err, ssot.ErrNotFound) {
		s.errorPage(w, r, v, http.StatusNotFound, "No diff is kept for "+msg+" of "+id+".")
		return
	}
	if err != nil {
		s.errorPage(w, r, v, http.StatusServiceUnavailable, err.Error())
		return
	}
	data := diffData{TaskID: id, MsgID: msg}
	for _, l := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
		c := ""
		switch {
		case strings.HasPrefix(l, "+++"), strings.HasPrefix(l, "---"), strings.HasPrefix(l, "diff "):
			c = "file"
		case strings.HasPrefix(l, "@@"):
			c = "hunk"
		case strings.HasPrefix(l, "+"):
			c = "add"
		case strings.HasPrefix(l, "-"):
			c = "del"
		}
		data.Lines = append(data.Lines, diffLine{Class: c, Text: l})
	}
	d := s.base(w, r, v, "Diff of "+msg, "record")
	d.Data = data
	s.render(w, r, http.StatusOK, "diff", d)
}
