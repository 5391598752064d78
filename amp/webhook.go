package amp

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
)

// Headers of a signed webhook delivery.
const (
	HeaderTimestamp = "X-AMP-Timestamp"
	HeaderSignature = "X-AMP-Signature"
)

// WebhookSignature is the X-AMP-Signature of a webhook body sent at ts (Unix
// seconds): "v1=" and the hex HMAC-SHA256, keyed with the secret, of
// ts + "." + body.
func WebhookSignature(secret, ts string, body []byte) string {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(ts + "."))
	mac.Write(body)
	return "v1=" + hex.EncodeToString(mac.Sum(nil))
}
