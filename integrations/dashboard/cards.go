package dashboard

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"html/template"
	"sync"
)

// maxCards bounds the card cache; when full it starts again.
const maxCards = 20000

// cardCache keeps each decision card as rendered, keyed by the decision,
// the page it returns to and who looks, and checked against the body the
// store holds now: a live page re-renders a thousand decisions of which
// one changed. An admin's card holds csrfMark where the session's CSRF
// token goes, put in when the page is assembled.
type cardCache struct {
	mu   sync.Mutex
	m    map[cardKey]cachedCard
	mark string
}

type cardKey struct {
	id, back string
	// viewer is "admin", or the name and role shown on a read-only card.
	viewer string
}

type cachedCard struct {
	body []byte
	html []byte
}

func newCardCache() *cardCache {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return &cardCache{m: map[cardKey]cachedCard{}, mark: "csrf-" + hex.EncodeToString(b)}
}

func (c *cardCache) get(k cardKey, body []byte) ([]byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	cc, ok := c.m[k]
	if !ok || !bytes.Equal(cc.body, body) {
		return nil, false
	}
	return cc.html, true
}

func (c *cardCache) put(k cardKey, body, html []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.m) >= maxCards {
		clear(c.m)
	}
	c.m[k] = cachedCard{body: bytes.Clone(body), html: html}
}

// assemble joins cards and puts the session's CSRF token in.
func (c *cardCache) assemble(cards [][]byte, csrf string) template.HTML {
	n := 0
	for _, h := range cards {
		n += len(h)
	}
	all := make([]byte, 0, n)
	for _, h := range cards {
		all = append(all, h...)
	}
	return template.HTML(bytes.ReplaceAll(all, []byte(c.mark), []byte(template.HTMLEscapeString(csrf))))
}
