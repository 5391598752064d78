package fakemodel

import (
	"fmt"
	"net/http"
	"strconv"
	"time"
)

// API names one of the dialects the server speaks, for the error turns
// that differ between them.
type API string

// The APIs, by the path their requests take.
const (
	Messages        API = "messages"         // Anthropic, /v1/messages
	Responses       API = "responses"        // OpenAI and ChatGPT, /v1/responses
	ChatCompletions API = "chat/completions" // OpenAI, /v1/chat/completions
	Gemini          API = "gemini"           // Google, /v1beta/models/…
)

// Limited is a turn that answers 429 as api does when its caller is at a
// usage or rate limit that lifts at reset: the body and headers its
// vendor documents.
//
//   - Responses: the ChatGPT backend's usage limit, as Codex reads it:
//     error.type usage_limit_reached with resets_at (Unix seconds) and
//     resets_in_seconds.
//   - Messages: error.type rate_limit_error, with retry-after (seconds)
//     and anthropic-ratelimit-requests-reset (RFC 3339).
//   - ChatCompletions: error.code rate_limit_exceeded, "Please try again
//     in …", with retry-after and x-ratelimit-reset-requests.
//   - Gemini: status RESOURCE_EXHAUSTED with a google.rpc.RetryInfo
//     retryDelay.
func Limited(api API, reset time.Time) Turn {
	secs := max(1, int64(time.Until(reset).Round(time.Second)/time.Second))
	after := http.Header{"Retry-After": {strconv.FormatInt(secs, 10)}}
	switch api {
	case Responses:
		return Turn{Status: http.StatusTooManyRequests, Body: fmt.Sprintf(
			`{"error":{"type":"usage_limit_reached","message":"The usage limit has been reached","resets_at":%d,"resets_in_seconds":%d}}`,
			reset.Unix(), secs)}
	case Messages:
		after.Set("Anthropic-Ratelimit-Requests-Reset", reset.UTC().Format(time.RFC3339))
		return Turn{Status: http.StatusTooManyRequests, Header: after, Body: `{"type":"error","error":{"type":"rate_limit_error",` +
			`"message":"This request would exceed your organization's rate limit. Please try again later."}}`}
	case ChatCompletions:
		after.Set("X-Ratelimit-Reset-Requests", fmt.Sprintf("%ds", secs))
		return Turn{Status: http.StatusTooManyRequests, Header: after, Body: fmt.Sprintf(
			`{"error":{"message":"Rate limit reached for requests. Please try again in %ds.","type":"requests","param":null,"code":"rate_limit_exceeded"}}`, secs)}
	case Gemini:
		return Turn{Status: http.StatusTooManyRequests, Body: fmt.Sprintf(
			`{"error":{"code":429,"message":"Resource has been exhausted (e.g. check quota).","status":"RESOURCE_EXHAUSTED",`+
				`"details":[{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"%ds"}]}}`, secs)}
	}
	panic("fakemodel: no API " + string(api))
}
