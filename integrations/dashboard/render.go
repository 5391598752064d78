package dashboard

import (
	"bytes"
	"embed"
	"html/template"
	"io/fs"
	"net/http"
	"strings"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// pageNames are the templates that are pages: each is layout.html with
// its own "content".
var pageNames = []string{"decisions", "tasks", "task", "start", "panel", "signin", "record", "diff", "cilog"}

type pages map[string]*template.Template

var funcs = template.FuncMap{
	"short": func(s string) string {
		if len(s) > 12 {
			return s[:12]
		}
		return s
	},
	"join":  strings.Join,
	"risks": func() []string { return []string{"low", "medium", "high"} },
	"tv":    newTimeView,
	"card":  card,
	"fieldErr": func(errs map[string]string, name string) fieldErr {
		return fieldErr{Errors: errs, Name: name}
	},
}

// fieldErr is one field of a form and the form's problems, for the
// field-error template.
type fieldErr struct {
	Errors map[string]string
	Name   string
}

// cardData is a decision card and what it shows of its viewer.
type cardData struct {
	D                *decisionView
	Admin            bool
	CSRF, Name, Role string
}

func card(root pageData, d any) cardData {
	c := cardData{Admin: root.Viewer.Admin(), CSRF: root.CSRF, Name: root.Viewer.Name, Role: string(root.Viewer.Role)}
	switch d := d.(type) {
	case decisionView:
		c.D = &d
	case *decisionView:
		c.D = d
	}
	return c
}

func parsePages() pages {
	p := pages{}
	for _, name := range pageNames {
		t := template.Must(template.New("layout.html").Funcs(funcs).ParseFS(templateFS,
			"templates/layout.html", "templates/parts.html", "templates/"+name+".html"))
		p[name] = t
	}
	return p
}

// pageData is what every page template gets.
type pageData struct {
	Title string
	// Nav is the page's entry in the navigation.
	Nav    string
	Viewer viewer
	CSRF   string
	Flash  string
	// Warnings are Options.Warnings, on every page.
	Warnings []string
	// Task is the task a task page shows, for its live events.
	Task string
	Data any
}

// render writes a page, or only its content when the page's script asks
// for a fragment to refresh itself.
func (s *Server) render(w http.ResponseWriter, r *http.Request, status int, name string, d pageData) {
	t := s.pages[name]
	root := "layout.html"
	if r.Header.Get("X-Dashboard-Fragment") != "" {
		root = "content"
	}
	var buf bytes.Buffer
	if err := t.ExecuteTemplate(&buf, root, d); err != nil {
		s.log.Error("dashboard: rendering", "page", name, "error", err)
		http.Error(w, "rendering "+name+": "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

// base fills what every page shows of its viewer.
func (s *Server) base(w http.ResponseWriter, r *http.Request, v viewer, title, nav string) pageData {
	d := pageData{Title: title, Nav: nav, Viewer: v, CSRF: s.auth.csrf(v), Warnings: s.warnings}
	if r.Header.Get("X-Dashboard-Fragment") == "" {
		d.Flash = s.takeFlash(w, r)
	}
	return d
}

func staticHandler() http.Handler {
	sub, err := fs.Sub(staticFS, "static")
	if err != nil {
		panic(err)
	}
	files := http.StripPrefix("/static/", http.FileServerFS(sub))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-cache")
		files.ServeHTTP(w, r)
	})
}

// errorPage answers a failed read in the page's form.
func (s *Server) errorPage(w http.ResponseWriter, r *http.Request, v viewer, status int, msg string) {
	d := s.base(w, r, v, "Error", "")
	d.Flash = msg
	d.Data = panelData{Name: "error", Heading: http.StatusText(status), Empty: msg}
	s.render(w, r, status, "panel", d)
}
