package httpapi

import (
	"bytes"
	"cmp"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ampflow/ampflow/activities/ssot"
)

// Bounds of every listing's limit.
const (
	defaultListLimit = 100
	maxListLimit     = 1000
)

// Listings, named in their cursors so that one listing's cursor is
// refused by another.
const (
	listTasks     = "tasks"
	listDecisions = "decisions"
	listInbox     = "inbox"
	listHistory   = "history"
)

// pageKey is an item's place in a listing's order: a time, a position and
// an id, compared in that order. A cursor holds the key of the last item
// of its page, so the next page starts after that place even when the item
// itself is gone.
type pageKey struct {
	List string    `json:"l"`
	At   time.Time `json:"t,omitzero"`
	N    int       `json:"n,omitempty"`
	ID   string    `json:"id,omitempty"`
	// S is the SSOT store's own cursor, for listings it pages itself.
	S string `json:"s,omitempty"`
}

// storePage is p as the SSOT store takes it.
func (p pageRequest) storePage() ssot.Page {
	sp := ssot.Page{Limit: p.limit}
	if p.after != nil {
		sp.Cursor = p.after.S
	}
	return sp
}

// storeNext is the API's cursor for the store's next, empty on the last
// page.
func (p pageRequest) storeNext(next string) string {
	if next == "" {
		return ""
	}
	return encodeCursor(pageKey{List: p.list, S: next})
}

func (k pageKey) compare(o pageKey) int {
	if c := k.At.Compare(o.At); c != 0 {
		return c
	}
	return cmp.Or(cmp.Compare(k.N, o.N), strings.Compare(k.ID, o.ID))
}

// pageRequest is a listing's limit and cursor, read from the query.
type pageRequest struct {
	list  string
	limit int
	after *pageKey
}

// readPage reads limit and cursor of the listing list from q.
func readPage(q url.Values, list string) (pageRequest, error) {
	p := pageRequest{list: list, limit: defaultListLimit}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxListLimit {
			return p, InvalidField("limit", fmt.Sprintf("must be a whole number from 1 to %d", maxListLimit))
		}
		p.limit = n
	}
	if v := q.Get("cursor"); v != "" {
		k, err := decodeCursor(v)
		if err != nil || k.List != list {
			return p, InvalidField("cursor", fmt.Sprintf("is not a next_cursor of GET %s; start again without it", listPath(list)))
		}
		p.after = &k
	}
	return p, nil
}

func listPath(list string) string {
	switch list {
	case listTasks:
		return "/v1/tasks"
	case listHistory:
		return "/v1/tasks/{id}/history"
	}
	return "/v1/" + list
}

func decodeCursor(s string) (pageKey, error) {
	var k pageKey
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return k, err
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	if err := d.Decode(&k); err != nil {
		return k, err
	}
	return k, nil
}

func encodeCursor(k pageKey) string {
	b, err := json.Marshal(k)
	if err != nil {
		panic(err) // a pageKey always encodes
	}
	return base64.RawURLEncoding.EncodeToString(b)
}

// cut orders items by keyOf (newest first when desc) and returns the
// page p asks for, with the cursor of the next page, empty on the last.
// keyOf gets each item's position in items as the backend answered them.
func cut[T any](items []T, p pageRequest, desc bool, keyOf func(i int, item T) pageKey) ([]T, string) {
	type keyed struct {
		key  pageKey
		item T
	}
	all := make([]keyed, len(items))
	for i, it := range items {
		k := keyOf(i, it)
		k.List = p.list
		all[i] = keyed{k, it}
	}
	order := func(a, b keyed) int {
		if desc {
			return b.key.compare(a.key)
		}
		return a.key.compare(b.key)
	}
	slices.SortStableFunc(all, order)
	start := 0
	if p.after != nil {
		start, _ = slices.BinarySearchFunc(all, keyed{key: *p.after}, order)
		if start < len(all) && all[start].key.compare(*p.after) == 0 {
			start++
		}
	}
	end := min(start+p.limit, len(all))
	out := make([]T, 0, end-start)
	for _, k := range all[start:end] {
		out = append(out, k.item)
	}
	next := ""
	if end < len(all) {
		next = encodeCursor(all[end-1].key)
	}
	return out, next
}
