package task

import (
	"net/url"
	"regexp"
	"unicode/utf8"
)

// Origin is where a task came from: an item of a tracker that started it.
// One item starts one task: a second start naming the same Source and
// ExternalID answers with the first task.
type Origin struct {
	// Source names the tracker: github, jira, linear, or any name of
	// lower-case letters, digits and - _ .
	Source string `json:"source"`
	// ExternalID is the item's id in the tracker (owner/repo#42, PROJ-7).
	ExternalID string `json:"external_id"`
	// URL links back to the item.
	URL string `json:"url,omitempty"`
}

// MaxExternalID bounds an Origin's ExternalID.
const MaxExternalID = 200

var sourceRE = regexp.MustCompile(`^[a-z0-9][a-z0-9_.-]{0,39}$`)

// Problems lists what is wrong with o, by field; nil when nothing is.
func (o Origin) Problems() map[string]string {
	p := map[string]string{}
	if !sourceRE.MatchString(o.Source) {
		p["source"] = "must be 1-40 lower-case letters, digits, - _ or ., starting with a letter or digit"
	}
	switch {
	case o.ExternalID == "":
		p["external_id"] = "is required with a source"
	case len(o.ExternalID) > MaxExternalID || !utf8.ValidString(o.ExternalID):
		p["external_id"] = "must be valid UTF-8 of at most 200 bytes"
	default:
		for _, r := range o.ExternalID {
			if r < 0x20 || r == 0x7f {
				p["external_id"] = "must not hold control characters"
				break
			}
		}
	}
	if o.URL != "" {
		if u, err := url.Parse(o.URL); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			p["url"] = "must be an http or https URL"
		}
	}
	if len(p) == 0 {
		return nil
	}
	return p
}
