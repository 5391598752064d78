package amp

import "encoding/json"

// The MarshalJSON methods below write nil required collections as [] or {}
// rather than null, so that a payload built in Go with a field left unset
// marshals to a document whose only complaint, if any, is emptiness.

// MarshalJSON implements json.Marshaler.
func (p TaskDispatch) MarshalJSON() ([]byte, error) {
	type plain TaskDispatch
	p.Subtasks = orEmpty(p.Subtasks)
	p.AcceptanceCriteria = orEmpty(p.AcceptanceCriteria)
	return json.Marshal(plain(p))
}

// MarshalJSON implements json.Marshaler.
func (p TaskResult) MarshalJSON() ([]byte, error) {
	type plain TaskResult
	p.WorkLog = orEmpty(p.WorkLog)
	return json.Marshal(plain(p))
}

// MarshalJSON implements json.Marshaler.
func (d DiffSummary) MarshalJSON() ([]byte, error) {
	type plain DiffSummary
	d.FilesChanged = orEmpty(d.FilesChanged)
	return json.Marshal(plain(d))
}

// MarshalJSON implements json.Marshaler.
func (s SelfAssessment) MarshalJSON() ([]byte, error) {
	type plain SelfAssessment
	s.CriteriaMet = orEmpty(s.CriteriaMet)
	s.Notes = orEmpty(s.Notes)
	return json.Marshal(plain(s))
}

// MarshalJSON implements json.Marshaler.
func (p ReviewVerdict) MarshalJSON() ([]byte, error) {
	type plain ReviewVerdict
	p.CriteriaResults = orEmpty(p.CriteriaResults)
	return json.Marshal(plain(p))
}

// MarshalJSON implements json.Marshaler.
func (p Escalation) MarshalJSON() ([]byte, error) {
	type plain Escalation
	p.AffectedMsgs = orEmpty(p.AffectedMsgs)
	if p.SystemStateSnapshot == nil {
		p.SystemStateSnapshot = map[string]any{}
	}
	return json.Marshal(plain(p))
}

func orEmpty[S ~[]E, E any](s S) S {
	if s == nil {
		return S{}
	}
	return s
}
