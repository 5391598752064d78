package delivery

import (
	"slices"
	"testing"
	"time"

	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/config"
)

func TestAccountsPool(t *testing.T) {
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	p := &Accounts{Now: func() time.Time { return now }}
	accs := []config.Account{{Name: "a"}, {Name: "b"}}
	take := func() (string, time.Time, bool) {
		acc, until, _, ok := p.Take(amp.RoleExecutor, accs)
		return acc.Name, until, ok
	}
	if name, _, ok := take(); !ok || name != "a" {
		t.Fatalf("first take = %q, %v; want a", name, ok)
	}
	t.Run("Order", func(t *testing.T) {
		if name, _, _ := take(); name != "a" {
			t.Errorf("a free account is not taken twice in a row? take = %q, want a (the first not resting)", name)
		}
	})
	t.Run("Rest", func(t *testing.T) {
		p.Rest(amp.RoleExecutor, "a", now.Add(time.Hour), "usage limit")
		if name, _, ok := take(); !ok || name != "b" {
			t.Errorf("take with a resting = %q, %v; want b", name, ok)
		}
		if acc, _, _, _ := p.Take(amp.RoleReviewer, accs); acc.Name != "a" {
			t.Errorf("the reviewer's a rests with the executor's: took %q", acc.Name)
		}
	})
	t.Run("AllResting", func(t *testing.T) {
		got := p.Rest(amp.RoleExecutor, "b", time.Time{}, "rate limit")
		if want := now.Add(DefaultAccountRest); !got.Equal(want) {
			t.Errorf("a rest with no reset ends %v, want %v", got, want)
		}
		_, until, why, ok := p.Take(amp.RoleExecutor, accs)
		if ok || !until.Equal(now.Add(DefaultAccountRest)) || why != "rate limit" {
			t.Errorf("take with all resting = %v, %v, %q; want none until the earliest reset (b's)", ok, until, why)
		}
		if s := allResting(amp.RoleExecutor, 2, until, why); s != "all 2 accounts of the executor rest until 12:15 UTC (rate limit)" {
			t.Errorf("allResting = %q", s)
		}
	})
	t.Run("Reset", func(t *testing.T) {
		now = now.Add(DefaultAccountRest)
		if name, _, ok := take(); !ok || name != "b" {
			t.Errorf("take after b's reset = %q, %v; want b", name, ok)
		}
		now = now.Add(time.Hour)
		if name, _, ok := take(); !ok || name != "a" {
			t.Errorf("take after a's reset = %q, %v; want a", name, ok)
		}
	})
	t.Run("Spend", func(t *testing.T) {
		p.Spend(amp.RoleExecutor, "a", 1.5)
		p.Spend(amp.RoleExecutor, "a", 0.25)
		p.Spend(amp.RoleExecutor, "b", 2)
		p.Spend(amp.RoleExecutor, "", 9) // no account: not kept
		want := []AccountSpend{{amp.RoleExecutor, "a", "2026-05-01", 1.75}, {amp.RoleExecutor, "b", "2026-05-01", 2}}
		if got := p.SpentToday(); !slices.Equal(got, want) {
			t.Errorf("SpentToday = %+v, want %+v", got, want)
		}
		now = now.AddDate(0, 0, 1)
		if got := p.SpentToday(); len(got) != 0 {
			t.Errorf("the next day starts at %+v, want nothing", got)
		}
	})
}

func TestAccountEnv(t *testing.T) {
	lookup := func(k string) (string, bool) {
		v, ok := map[string]string{"KEY_A": "sk-account-a"}[k]
		return v, ok
	}
	env, secrets := accountEnv(config.Account{Name: "a", Env: []string{"ANTHROPIC_API_KEY=$KEY_A", "OTHER_KEY=$UNSET", "CLAUDE_CONFIG_DIR=/c/a"}}, lookup)
	if want := []string{"ANTHROPIC_API_KEY=sk-account-a", "CLAUDE_CONFIG_DIR=/c/a"}; !slices.Equal(env, want) {
		t.Errorf("env = %q, want %q", env, want)
	}
	if want := []string{"sk-account-a"}; !slices.Equal(secrets, want) {
		t.Errorf("secrets = %q, want %q", secrets, want)
	}
	if keepsSessions(config.Account{Env: []string{"CLAUDE_CONFIG_DIR=/c/a"}}) || keepsSessions(config.Account{Env: []string{"CODEX_HOME=/c"}}) ||
		!keepsSessions(config.Account{Env: []string{"ANTHROPIC_API_KEY=$K"}}) {
		t.Error("keepsSessions: a config or home directory keeps sessions apart, a key does not")
	}
}
