package ssot

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash"
	"strconv"
	"time"

	"github.com/ampflow/ampflow/amp"
)

// chainTag starts every row hash's input, so the scheme can change later
// under another tag: /1 is SHA-256, for a store given no key; /2 is
// HMAC-SHA256 keyed with the store's chain key (KeyChain).
const (
	chainTag      = "ampflow-ssot-chain/1"
	keyedChainTag = "ampflow-ssot-chain/2"
)

// ChainKey is the key of the records' chain, derived from the decision
// key, which every worker and API process holds and no agent run sees: a
// record rewritten in the database, its hashes computed again, fails
// verification unless whoever rewrote it held the decision key.
func ChainKey(decisionKey []byte) []byte {
	m := hmac.New(sha256.New, decisionKey)
	m.Write([]byte(keyedChainTag))
	return m.Sum(nil)
}

// Canonical returns body in the canonical JSON form the chain hashes
// (amp.Canonical).
func Canonical(body []byte) (json.RawMessage, error) { return amp.Canonical(body) }

// hashHex is the SHA-256 of b in hex.
func hashHex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// rowHash links a row to the one before it: every stored field but the
// body enters directly, the body through its hash. With a chain key it is
// an HMAC, which only a holder of the key can compute.
func rowHash(key []byte, prev, taskID string, seq int64, id, kind string, micros int64, digest, bodyHash string) string {
	tag := chainTag
	var h hash.Hash
	if key != nil {
		tag, h = keyedChainTag, hmac.New(sha256.New, key)
	} else {
		h = sha256.New()
	}
	fmt.Fprintf(h, "%s\n%s\n%s\n%d\n%s\n%s\n%d\n%s\n%s\n", tag, prev, taskID, seq, id, kind, micros, digest, bodyHash)
	return hex.EncodeToString(h.Sum(nil))
}

// check recomputes a stored row against the previous hash, keyed with key.
func (r Record) check(key []byte, prev string) string {
	switch {
	case r.PrevHash != prev:
		return "does not follow the previous record (prev_hash differs)"
	case hashHex(r.Body) != r.BodyHash:
		return "body was changed (body_hash differs)"
	case rowHash(key, prev, r.TaskID, r.Seq, r.ID, r.Kind, r.RecordedAt.UnixMicro(), r.Digest, r.BodyHash) != r.Hash:
		return "fields were changed (hash differs)"
	}
	return ""
}

// micros is a time as stored: microseconds since the epoch, the finest
// both engines keep.
func micros(t time.Time) int64 { return t.UnixMicro() }

func fromMicros(us int64) time.Time { return time.UnixMicro(us).UTC() }

// Cursors are opaque to callers: a sequence number or a key, base64url.
func encodeCursor(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }

func decodeCursor(c string) (string, error) {
	b, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil {
		return "", &InvalidError{"cursor", "is not a cursor this store returned"}
	}
	return string(b), nil
}

func seqCursor(seq int64) string { return encodeCursor(strconv.FormatInt(seq, 10)) }

func decodeSeqCursor(c string) (int64, error) {
	if c == "" {
		return 0, nil
	}
	s, err := decodeCursor(c)
	if err != nil {
		return 0, err
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 {
		return 0, &InvalidError{"cursor", "is not a cursor this store returned"}
	}
	return n, nil
}

// cutPage keeps the first limit items of a query that asked for limit+1,
// and names the next page by its last item's cursor; "" when none is left.
func cutPage[T any](items []T, limit int, cursor func(T) string) ([]T, string) {
	if len(items) <= limit {
		return items, ""
	}
	items = items[:limit]
	return items, cursor(items[limit-1])
}

// VerifyRecords checks that recs are a whole chain from its first
// record, as Verify checks the stored one: each follows the one before
// and holds what its hashes, keyed with key (ChainKey; nil for a store
// given none), say. It returns the chain's head.
func VerifyRecords(key []byte, taskID string, recs []Record) (Head, error) {
	prev := Head{}
	for _, r := range recs {
		if r.Seq != prev.Seq+1 {
			return Head{}, &ChainError{TaskID: taskID, Seq: prev.Seq + 1, Problem: "is missing (deleted)"}
		}
		if problem := r.check(key, prev.Hash); problem != "" {
			return Head{}, &ChainError{TaskID: taskID, Seq: r.Seq, ID: r.ID, Problem: problem}
		}
		prev = Head{Seq: r.Seq, Hash: r.Hash}
	}
	return prev, nil
}
