package gate

import (
	"encoding/json"
	"fmt"
	"strings"
)

// Bounds of the artifacts shown to the admins in the chat facts.
const (
	MaxFactArtifacts = 5
	MaxFactArtifact  = 300 // characters of one artifact's text
)

// ArtifactFacts is what the admins read of a signal's artifacts: the
// first MaxFactArtifacts, each its type and content (or its JSON)
// clipped to MaxFactArtifact characters, and how many more there are.
func ArtifactFacts(arts []json.RawMessage) []string {
	out := make([]string, 0, min(len(arts), MaxFactArtifacts)+1)
	for i, a := range arts {
		if i == MaxFactArtifacts {
			out = append(out, fmt.Sprintf("(%d more)", len(arts)-i))
			break
		}
		var v struct {
			Type    string `json:"type"`
			Name    string `json:"name"`
			Content any    `json:"content"`
		}
		text := string(a)
		if json.Unmarshal(a, &v) == nil && v.Content != nil {
			label := v.Type
			if v.Name != "" {
				label = strings.TrimSpace(label + " " + v.Name)
			}
			c, ok := v.Content.(string)
			if !ok {
				raw, _ := json.Marshal(v.Content)
				c = string(raw)
			}
			text = c
			if label != "" {
				text = label + ": " + c
			}
		}
		out = append(out, clipText(text, MaxFactArtifact))
	}
	return out
}

func clipText(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}
