package task

import (
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/decision"
)

// FormatDuration writes d in the largest unit that holds it whole, the way
// people write durations and time.ParseDuration reads them: 300ms, 45s,
// 5m, 2h, 90s; never a count of nanoseconds, never 5m0s.
func FormatDuration(d time.Duration) string {
	if d == 0 {
		return "0s"
	}
	for _, u := range []struct {
		d    time.Duration
		name string
	}{{time.Hour, "h"}, {time.Minute, "m"}, {time.Second, "s"}, {time.Millisecond, "ms"}} {
		if d%u.d == 0 {
			return strconv.FormatInt(int64(d/u.d), 10) + u.name
		}
	}
	return d.String()
}

// Duration is a time.Duration that reads and writes JSON as text ("300s",
// "10m"). It also reads a JSON number of nanoseconds, the form earlier
// task inputs carry in their histories.
type Duration time.Duration

// MarshalJSON writes the duration as FormatDuration text.
func (d Duration) MarshalJSON() ([]byte, error) {
	return json.Marshal(FormatDuration(time.Duration(d)))
}

// UnmarshalJSON reads "300s" or a number of nanoseconds.
func (d *Duration) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		v, err := time.ParseDuration(s)
		if err != nil {
			return fmt.Errorf("reading duration %q: %w", s, err)
		}
		*d = Duration(v)
		return nil
	}
	var n int64
	if err := json.Unmarshal(b, &n); err != nil {
		return fmt.Errorf("reading duration %s: must be text such as \"300s\"", b)
	}
	*d = Duration(n)
	return nil
}

// policyAlias has Policy's fields without its JSON methods.
type policyAlias Policy

// policyJSON is Policy on the wire: its durations as text. Its fields
// shadow the embedded ones of the same name.
type policyJSON struct {
	policyAlias
	AckTimeouts      map[amp.Type]Duration `json:"ack_timeouts"`
	HeartbeatTimeout Duration              `json:"heartbeat_timeout"`
	CIPollInterval   Duration              `json:"ci_poll_interval"`
	CITimeout        Duration              `json:"ci_timeout"`
	Decisions        decisionsJSON         `json:"decisions"`
}

// decisionsJSON is decision.Policy with its durations as text.
type decisionsJSON struct {
	Quorum        decision.Quorum   `json:"quorum"`
	RemindAfter   Duration          `json:"remind_after"`
	EscalateAfter Duration          `json:"escalate_after"`
	ExpireAfter   Duration          `json:"expire_after"`
	Persons       map[string]string `json:"persons,omitempty"`
}

// MarshalJSON writes the policy with durations as text ("300s", "30m"),
// as users read it in the API, the SSOT and the Temporal Web UI.
func (p Policy) MarshalJSON() ([]byte, error) {
	out := policyJSON{
		policyAlias:      policyAlias(p),
		HeartbeatTimeout: Duration(p.HeartbeatTimeout),
		CIPollInterval:   Duration(p.CIPollInterval),
		CITimeout:        Duration(p.CITimeout),
		Decisions: decisionsJSON{
			Quorum:        p.Decisions.Quorum,
			RemindAfter:   Duration(p.Decisions.RemindAfter),
			EscalateAfter: Duration(p.Decisions.EscalateAfter),
			ExpireAfter:   Duration(p.Decisions.ExpireAfter),
			Persons:       p.Decisions.Persons,
		},
	}
	if p.AckTimeouts != nil {
		out.AckTimeouts = make(map[amp.Type]Duration, len(p.AckTimeouts))
		for k, v := range p.AckTimeouts {
			out.AckTimeouts[k] = Duration(v)
		}
	}
	return json.Marshal(out)
}

// UnmarshalJSON reads a policy with durations as text or, as tasks
// started before carry it, as numbers of nanoseconds.
func (p *Policy) UnmarshalJSON(b []byte) error {
	var in policyJSON
	if err := json.Unmarshal(b, &in); err != nil {
		return err
	}
	*p = Policy(in.policyAlias)
	p.HeartbeatTimeout = time.Duration(in.HeartbeatTimeout)
	p.CIPollInterval = time.Duration(in.CIPollInterval)
	p.CITimeout = time.Duration(in.CITimeout)
	p.Decisions = decision.Policy{
		Quorum:        in.Decisions.Quorum,
		RemindAfter:   time.Duration(in.Decisions.RemindAfter),
		EscalateAfter: time.Duration(in.Decisions.EscalateAfter),
		ExpireAfter:   time.Duration(in.Decisions.ExpireAfter),
		Persons:       in.Decisions.Persons,
	}
	p.AckTimeouts = nil
	if in.AckTimeouts != nil {
		p.AckTimeouts = make(map[amp.Type]time.Duration, len(in.AckTimeouts))
		for k, v := range in.AckTimeouts {
			p.AckTimeouts[k] = time.Duration(v)
		}
	}
	return nil
}
