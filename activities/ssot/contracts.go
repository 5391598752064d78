package ssot

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Stored states of a contract (expired is read from its expiry).
const (
	ContractIssued           = "issued"
	ContractAwaitingApproval = "awaiting_approval"
	ContractApproved         = "approved"
	ContractRejected         = "rejected"
	ContractRedeemed         = "redeemed"
)

// ContractRow is one stored risk contract: the contract as signed (Body)
// and what became of it. The store neither reads nor checks Body; the
// caller verifies Signature over it.
type ContractRow struct {
	ID              string
	Owner           string
	SessionID       string
	Primitive       string
	MinimumHandling string
	Body            json.RawMessage
	Digest          string
	Signature       string
	State           string
	// GateID is the gate that decides the contract, when it needs one.
	GateID string
	// DecidedBy is who approved or rejected it.
	DecidedBy  string
	IssuedAt   time.Time
	ExpiresAt  time.Time
	ChangedAt  time.Time
	RedeemedAt time.Time
}

// ErrContractState is returned (wrapped) by a contract transition whose
// contract is not in the state it starts from (or has expired): a
// concurrent call moved it first.
var ErrContractState = errors.New("contract is not in the expected state")

// zeroMicros is a time as stored where the zero time is 0.
func zeroMicros(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMicro()
}

func zeroFromMicros(us int64) time.Time {
	if us == 0 {
		return time.Time{}
	}
	return time.UnixMicro(us).UTC()
}

// PutContract stores a new contract. An id stored already is an error.
func (s *DB) PutContract(ctx context.Context, c ContractRow) error {
	if err := checkID("contract id", c.ID); err != nil {
		return err
	}
	if c.ChangedAt.IsZero() {
		c.ChangedAt = c.IssuedAt
	}
	_, err := s.db.ExecContext(ctx, s.rebind(`INSERT INTO contracts
		(id, owner, session_id, primitive, minimum_handling, body, digest, signature, state, gate_id, decided_by, issued_at, expires_at, changed_at, redeemed_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`),
		c.ID, c.Owner, c.SessionID, c.Primitive, c.MinimumHandling, string(c.Body), c.Digest, c.Signature, c.State,
		c.GateID, c.DecidedBy, micros(c.IssuedAt), micros(c.ExpiresAt), micros(c.ChangedAt), zeroMicros(c.RedeemedAt))
	if err != nil {
		return fmt.Errorf("storing contract %s: %w", c.ID, err)
	}
	return nil
}

// Contract reads one contract; a missing one wraps ErrNotFound.
func (s *DB) Contract(ctx context.Context, id string) (ContractRow, error) {
	var (
		c                                    ContractRow
		body                                 string
		issued, expires, changed, redeemedAt int64
	)
	err := s.db.QueryRowContext(ctx, s.rebind(`SELECT id, owner, session_id, primitive, minimum_handling, body, digest, signature,
		state, gate_id, decided_by, issued_at, expires_at, changed_at, redeemed_at FROM contracts WHERE id = ?`), id).
		Scan(&c.ID, &c.Owner, &c.SessionID, &c.Primitive, &c.MinimumHandling, &body, &c.Digest, &c.Signature,
			&c.State, &c.GateID, &c.DecidedBy, &issued, &expires, &changed, &redeemedAt)
	if errors.Is(err, sql.ErrNoRows) {
		return ContractRow{}, fmt.Errorf("contract %s: %w", id, ErrNotFound)
	}
	if err != nil {
		return ContractRow{}, fmt.Errorf("reading contract %s: %w", id, err)
	}
	c.Body = json.RawMessage(body)
	c.IssuedAt, c.ExpiresAt, c.ChangedAt, c.RedeemedAt = fromMicros(issued), fromMicros(expires), fromMicros(changed), zeroFromMicros(redeemedAt)
	return c, nil
}

// SetContractGate records the gate that decides contract id, which waits
// for its approval.
func (s *DB) SetContractGate(ctx context.Context, id, gateID string, now time.Time) error {
	return s.moveContract(ctx, id, ContractAwaitingApproval, `gate_id = ?, changed_at = ?`, now, gateID, micros(now))
}

// DecideContract moves contract id from awaiting_approval to approved or
// rejected, by whom its gate says. A contract no longer awaiting approval
// (or expired) is ErrContractState.
func (s *DB) DecideContract(ctx context.Context, id, state, by string, now time.Time) error {
	if state != ContractApproved && state != ContractRejected {
		return &InvalidError{"contract state", fmt.Sprintf("must be %s or %s, not %q", ContractApproved, ContractRejected, state)}
	}
	return s.moveContract(ctx, id, ContractAwaitingApproval, `state = ?, decided_by = ?, changed_at = ?`, now, state, by, micros(now))
}

// RedeemContract marks contract id redeemed, in one statement, if it is
// in state from and has not expired at now: of two calls racing, one
// wins and the other gets ErrContractState.
func (s *DB) RedeemContract(ctx context.Context, id, from string, now time.Time) error {
	return s.moveContract(ctx, id, from, `state = ?, redeemed_at = ?, changed_at = ?`, now, ContractRedeemed, micros(now), micros(now))
}

// moveContract updates contract id with set (its arguments args) when it
// is in state from and unexpired at now.
func (s *DB) moveContract(ctx context.Context, id, from, set string, now time.Time, args ...any) error {
	args = append(args, id, from, micros(now))
	res, err := s.db.ExecContext(ctx, s.rebind(`UPDATE contracts SET `+set+` WHERE id = ? AND state = ? AND expires_at > ?`), args...)
	if err != nil {
		return fmt.Errorf("updating contract %s: %w", id, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return fmt.Errorf("updating contract %s: %w", id, err)
	}
	if n == 0 {
		return fmt.Errorf("contract %s from %s: %w", id, from, ErrContractState)
	}
	return nil
}
