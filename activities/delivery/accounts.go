package delivery

import (
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/config"
)

// DefaultAccountRest is how long an account rests after a usage or rate
// limit whose message gave no reset time.
const DefaultAccountRest = 15 * time.Minute

// Accounts is a worker's pool of its runners' accounts
// (agents.<role>.accounts): which rest, until when and why, and what
// each spent per day (UTC). It is the worker's own: another worker learns
// that an account rests when its own run hits the limit. The zero value
// is ready; a nil *Accounts keeps nothing.
type Accounts struct {
	mu    sync.Mutex
	rests map[accountKey]accountRest
	spent map[accountDay]float64
	// Now is the pool's clock; nil means time.Now.
	Now func() time.Time
}

type accountKey struct {
	role amp.Role
	name string
}

type accountDay struct {
	day string // 2006-01-02, UTC
	accountKey
}

type accountRest struct {
	until time.Time
	why   string
}

// AccountSpend is what one account spent on one day.
type AccountSpend struct {
	Role    amp.Role `json:"role"`
	Account string   `json:"account"`
	Day     string   `json:"day"`
	USD     float64  `json:"usd"`
}

func (p *Accounts) now() time.Time {
	if p.Now != nil {
		return p.Now()
	}
	return time.Now()
}

// Take is the first of a role's accounts that is not resting. When all
// rest, ok is false and until is the earliest reset, why its reason.
func (p *Accounts) Take(role amp.Role, accounts []config.Account) (acc config.Account, until time.Time, why string, ok bool) {
	if len(accounts) == 0 {
		return config.Account{}, time.Time{}, "", false
	}
	if p == nil {
		return accounts[0], time.Time{}, "", true
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.now()
	for _, a := range accounts {
		r, resting := p.rests[accountKey{role, a.Name}]
		if !resting || !r.until.After(now) {
			return a, time.Time{}, "", true
		}
		if until.IsZero() || r.until.Before(until) {
			until, why = r.until, r.why
		}
	}
	return config.Account{}, until, why, false
}

// Rest rests a role's account until a reset (DefaultAccountRest from now
// when zero or past) and returns when it ends.
func (p *Accounts) Rest(role amp.Role, name string, until time.Time, why string) time.Time {
	if p == nil {
		return until
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if now := p.now(); !until.After(now) {
		until = now.Add(DefaultAccountRest)
	}
	if p.rests == nil {
		p.rests = map[accountKey]accountRest{}
	}
	p.rests[accountKey{role, name}] = accountRest{until: until, why: why}
	return until
}

// Spend adds what a run on an account cost to its day.
func (p *Accounts) Spend(role amp.Role, name string, usd float64) {
	if p == nil || name == "" || usd <= 0 {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.spent == nil {
		p.spent = map[accountDay]float64{}
	}
	day := p.now().UTC().Format(time.DateOnly)
	for k := range p.spent {
		// Only today's and yesterday's days are kept.
		if k.day < p.now().UTC().AddDate(0, 0, -1).Format(time.DateOnly) {
			delete(p.spent, k)
		}
	}
	p.spent[accountDay{day, accountKey{role, name}}] += usd
}

// SpentToday is what each account spent today (UTC), by role then
// account name.
func (p *Accounts) SpentToday() []AccountSpend {
	if p == nil {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	day := p.now().UTC().Format(time.DateOnly)
	var out []AccountSpend
	for k, usd := range p.spent {
		if k.day == day {
			out = append(out, AccountSpend{Role: k.role, Account: k.name, Day: k.day, USD: usd})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Role != out[j].Role {
			return out[i].Role < out[j].Role
		}
		return out[i].Account < out[j].Account
	})
	return out
}

// accountEnv is what an account sets in a run's environment, each
// NAME=$SOURCE read from the worker's environment (a SOURCE unset sets
// nothing), and the values so read, which are secrets.
func accountEnv(acc config.Account, lookup func(string) (string, bool)) (env, secrets []string) {
	if lookup == nil {
		lookup = os.LookupEnv
	}
	for _, e := range acc.Env {
		name, value, _ := strings.Cut(e, "=")
		source, fromEnv := strings.CutPrefix(value, "$")
		if !fromEnv {
			env = append(env, e)
			continue
		}
		v, ok := lookup(source)
		if !ok {
			continue
		}
		env = append(env, name+"="+v)
		if len(v) >= 4 && !slices.Contains(secrets, v) {
			secrets = append(secrets, v)
		}
	}
	return env, secrets
}

// keepsSessions says whether a run may resume, under acc, a session begun
// under another account: not when acc moves the CLI's home or config
// directory (CLAUDE_CONFIG_DIR, CODEX_HOME, …), where its sessions live.
func keepsSessions(acc config.Account) bool {
	for _, e := range acc.Env {
		name, _, _ := strings.Cut(e, "=")
		if name == "HOME" || strings.HasSuffix(name, "_HOME") || strings.HasSuffix(name, "_CONFIG_DIR") {
			return false
		}
	}
	return true
}

// allResting says that every account of a role rests.
func allResting(role amp.Role, n int, until time.Time, why string) string {
	return fmt.Sprintf("all %d accounts of the %s rest until %s (%s)", n, role, until.UTC().Format("15:04 MST"), why)
}
