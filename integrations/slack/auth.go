package slack

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"strconv"
	"time"
)

// signatureWindow is how far a request's timestamp may be from now.
const signatureWindow = 5 * time.Minute

// Errors of request verification; none reaches the caller, who gets 401.
var (
	errNoSignature = errors.New("missing signature headers")
	errStale       = errors.New("timestamp outside the 5-minute window")
	errBadSig      = errors.New("signature mismatch")
)

// verify checks Slack's v0 request signature: an HMAC-SHA256 over
// "v0:{timestamp}:{body}" keyed with the signing secret.
func verify(h http.Header, body []byte, secret string, now time.Time) error {
	ts, sig := h.Get("X-Slack-Request-Timestamp"), h.Get("X-Slack-Signature")
	if ts == "" || sig == "" || secret == "" {
		return errNoSignature
	}
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return errNoSignature
	}
	if d := now.Sub(time.Unix(sec, 0)); d > signatureWindow || d < -signatureWindow {
		return errStale
	}
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte("v0:" + ts + ":"))
	mac.Write(body)
	want := "v0=" + hex.EncodeToString(mac.Sum(nil))
	if !hmac.Equal([]byte(want), []byte(sig)) {
		return errBadSig
	}
	return nil
}
