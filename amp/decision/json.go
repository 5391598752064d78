package decision

import "encoding/json"

// orEmpty is s, or an empty slice for nil: a list that can be empty is
// written as [], never null or absent, wherever these types are sent.
func orEmpty[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// MarshalJSON writes options and approvals as [] when there are none.
func (d Decision) MarshalJSON() ([]byte, error) {
	type plain Decision
	p := plain(d)
	p.Options, p.Approvals = orEmpty(p.Options), orEmpty(p.Approvals)
	return json.Marshal(p)
}

// MarshalJSON writes by as [] when nobody has approved yet.
func (p Progress) MarshalJSON() ([]byte, error) {
	type plain Progress
	q := plain(p)
	q.By = orEmpty(q.By)
	return json.Marshal(q)
}

// MarshalJSON writes approvers as [] for a decision taken without a quorum.
func (o Outcome) MarshalJSON() ([]byte, error) {
	type plain Outcome
	p := plain(o)
	p.Approvers = orEmpty(p.Approvers)
	return json.Marshal(p)
}

// MarshalJSON writes issues, blockers and suggested_actions as [] when
// the decision has none.
func (c Context) MarshalJSON() ([]byte, error) {
	type plain Context
	p := plain(c)
	p.Issues, p.Blockers, p.Suggested = orEmpty(p.Issues), orEmpty(p.Blockers), orEmpty(p.Suggested)
	return json.Marshal(p)
}
