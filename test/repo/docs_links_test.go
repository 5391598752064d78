package repo

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// readmeMaxLines bounds the README: the front door, with the rest in docs/.
const readmeMaxLines = 200

var (
	mdLink     = regexp.MustCompile(`\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)
	codeSpan   = regexp.MustCompile("`[^`\n]*`")
	schemeLink = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9+.-]*:`)
)

// TestDocsLinks checks that every relative link in README.md,
// BENCHMARKS.md and docs/**/*.md names a file or directory of the
// repository (the anchor aside), and that the README stays short.
func TestDocsLinks(t *testing.T) {
	root := filepath.Join("..", "..")
	pages := []string{filepath.Join(root, "README.md"), filepath.Join(root, "BENCHMARKS.md")}
	err := filepath.WalkDir(filepath.Join(root, "docs"), func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(p, ".md") {
			pages = append(pages, p)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("walking docs/: %v", err)
	}
	links := 0
	for _, page := range pages {
		raw, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(root, page)
		for _, l := range pageLinks(raw) {
			links++
			target, _, _ := strings.Cut(l.target, "#")
			if target == "" {
				continue // an anchor in the same page
			}
			path := filepath.Join(filepath.Dir(page), filepath.FromSlash(target))
			if r, err := filepath.Rel(root, path); err != nil || strings.HasPrefix(r, "..") {
				t.Errorf("%s:%d: link %s leaves the repository", rel, l.line, l.target)
				continue
			}
			if _, err := os.Stat(path); err != nil {
				t.Errorf("%s:%d: link %s names no file", rel, l.line, l.target)
			}
		}
	}
	if links < 20 {
		t.Errorf("found %d links in %d pages; the parser is probably broken", links, len(pages))
	}

	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if n := bytes.Count(readme, []byte("\n")); n > readmeMaxLines {
		t.Errorf("README.md has %d lines; keep it at most %d and move reference text to docs/", n, readmeMaxLines)
	}
}

type docLink struct {
	line   int
	target string
}

// pageLinks returns the relative links of a markdown page, outside code
// blocks and code spans; links with a scheme (https:, mailto:) are left out.
func pageLinks(page []byte) []docLink {
	var out []docLink
	fenced := false
	for i, line := range strings.Split(string(page), "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			continue
		}
		if fenced {
			continue
		}
		line = codeSpan.ReplaceAllString(line, "")
		for _, m := range mdLink.FindAllStringSubmatch(line, -1) {
			if !schemeLink.MatchString(m[1]) {
				out = append(out, docLink{line: i + 1, target: m[1]})
			}
		}
	}
	return out
}
