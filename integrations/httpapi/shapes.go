package httpapi

import "encoding/json"

// The answers' lists are written as [] when empty, never null or absent:
// a client reads .tasks or .fields without a check first. The OpenAPI
// document marks them required (TestEmptyShapes).

// orEmpty is s, or an empty slice for nil.
func orEmpty[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// MarshalJSON writes tasks as [] when there are none.
func (l ListResponse) MarshalJSON() ([]byte, error) {
	type plain ListResponse
	p := plain(l)
	p.Tasks = orEmpty(p.Tasks)
	return json.Marshal(p)
}

// MarshalJSON writes records as [] when there are none.
func (h HistoryResponse) MarshalJSON() ([]byte, error) {
	type plain HistoryResponse
	p := plain(h)
	p.Records = orEmpty(p.Records)
	return json.Marshal(p)
}

// MarshalJSON writes messages as [] when none is waiting.
func (i InboxResponse) MarshalJSON() ([]byte, error) {
	type plain InboxResponse
	p := plain(i)
	p.Messages, p.Acked = orEmpty(p.Messages), orEmpty(p.Acked)
	return json.Marshal(p)
}

// MarshalJSON writes warnings as [] when git agrees.
func (r SubmitResponse) MarshalJSON() ([]byte, error) {
	type plain SubmitResponse
	p := plain(r)
	p.Warnings = orEmpty(p.Warnings)
	return json.Marshal(p)
}

// MarshalJSON writes decisions as [] when none is open.
func (d DecisionsResponse) MarshalJSON() ([]byte, error) {
	type plain DecisionsResponse
	p := plain(d)
	p.Decisions = orEmpty(p.Decisions)
	return json.Marshal(p)
}

// MarshalJSON writes fields as [] when no field is at fault.
func (e errorDetail) MarshalJSON() ([]byte, error) {
	type plain errorDetail
	p := plain(e)
	p.Fields = orEmpty(p.Fields)
	return json.Marshal(p)
}

// MarshalJSON writes rounds as [] when CI has not been read.
func (c TaskCIResponse) MarshalJSON() ([]byte, error) {
	type plain TaskCIResponse
	p := plain(c)
	p.Rounds = orEmpty(p.Rounds)
	return json.Marshal(p)
}
