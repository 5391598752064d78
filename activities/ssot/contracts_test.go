package ssot

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"
)

func contractRow(id, state string, issued time.Time) ContractRow {
	return ContractRow{
		ID: id, Owner: "agent:deployer", SessionID: "s1", Primitive: "deploy.production", MinimumHandling: "human_required",
		Body: json.RawMessage(`{"contractId":"` + id + `"}`), Digest: "d1", Signature: "sig", State: state,
		IssuedAt: issued, ExpiresAt: issued.Add(time.Minute),
	}
}

func TestContractStoreRoundTrip(t *testing.T) {
	eachEngine(t, func(t *testing.T, s *DB, _ string) {
		ctx := context.Background()
		now := time.Date(2026, 11, 23, 21, 0, 0, 123456000, time.UTC)
		want := contractRow("cnt_a", ContractIssued, now)
		if err := s.PutContract(ctx, want); err != nil {
			t.Fatal(err)
		}
		if err := s.PutContract(ctx, want); err == nil {
			t.Error("a second contract with the same id was stored")
		}
		got, err := s.Contract(ctx, "cnt_a")
		if err != nil {
			t.Fatal(err)
		}
		want.ChangedAt = want.IssuedAt
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("read back\n%+v\nwant\n%+v", got, want)
		}
		if _, err := s.Contract(ctx, "cnt_none"); !errors.Is(err, ErrNotFound) {
			t.Errorf("missing contract: %v; want ErrNotFound", err)
		}
	})
}

func TestContractStoreTransitions(t *testing.T) {
	eachEngine(t, func(t *testing.T, s *DB, _ string) {
		ctx := context.Background()
		now := time.Now().UTC().Truncate(time.Microsecond)
		if err := s.PutContract(ctx, contractRow("cnt_g", ContractAwaitingApproval, now)); err != nil {
			t.Fatal(err)
		}
		if err := s.RedeemContract(ctx, "cnt_g", ContractIssued, now); !errors.Is(err, ErrContractState) {
			t.Errorf("redeeming a contract awaiting approval as issued: %v", err)
		}
		if err := s.SetContractGate(ctx, "cnt_g", "gate-1", now); err != nil {
			t.Fatal(err)
		}
		if err := s.DecideContract(ctx, "cnt_g", ContractApproved, "ana", now); err != nil {
			t.Fatal(err)
		}
		if err := s.DecideContract(ctx, "cnt_g", ContractRejected, "bob", now); !errors.Is(err, ErrContractState) {
			t.Errorf("deciding twice: %v", err)
		}
		c, _ := s.Contract(ctx, "cnt_g")
		if c.State != ContractApproved || c.GateID != "gate-1" || c.DecidedBy != "ana" {
			t.Errorf("after approval %+v", c)
		}
		if err := s.RedeemContract(ctx, "cnt_g", ContractApproved, now.Add(time.Minute)); !errors.Is(err, ErrContractState) {
			t.Errorf("redeeming at its expiry: %v", err)
		}
		if err := s.RedeemContract(ctx, "cnt_g", ContractApproved, now); err != nil {
			t.Fatal(err)
		}
		c, _ = s.Contract(ctx, "cnt_g")
		if c.State != ContractRedeemed || !c.RedeemedAt.Equal(now) {
			t.Errorf("after redeeming %+v", c)
		}
	})
}

// Of many workers redeeming one contract at once, exactly one succeeds.
func TestContractRedeemOnce(t *testing.T) {
	eachEngine(t, func(t *testing.T, s *DB, u string) {
		ctx := context.Background()
		now := time.Now().UTC()
		workers := []*DB{s, openStore(t, u), openStore(t, u)}
		for round := range 5 {
			id := fmt.Sprintf("cnt_r%d", round)
			if err := s.PutContract(ctx, contractRow(id, ContractIssued, now)); err != nil {
				t.Fatal(err)
			}
			var (
				wg       sync.WaitGroup
				mu       sync.Mutex
				won, los int
			)
			for i := range 12 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					err := workers[i%len(workers)].RedeemContract(ctx, id, ContractIssued, now)
					mu.Lock()
					defer mu.Unlock()
					switch {
					case err == nil:
						won++
					case errors.Is(err, ErrContractState):
						los++
					default:
						t.Error(err)
					}
				}()
			}
			wg.Wait()
			if won != 1 || los != 11 {
				t.Fatalf("%s: %d redeemed, %d refused; want 1 and 11", id, won, los)
			}
		}
	})
}
