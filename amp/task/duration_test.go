package task

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/decision"
)

func TestFormatDuration(t *testing.T) {
	for _, c := range []struct {
		d    time.Duration
		want string
	}{
		{0, "0s"},
		{300 * time.Second, "5m"},
		{90 * time.Second, "90s"},
		{10 * time.Minute, "10m"},
		{2 * time.Hour, "2h"},
		{90 * time.Minute, "90m"},
		{1500 * time.Millisecond, "1500ms"},
		{20 * time.Millisecond, "20ms"},
		{1500 * time.Nanosecond, "1.5µs"},
	} {
		if got := FormatDuration(c.d); got != c.want {
			t.Errorf("FormatDuration(%d) = %q, want %q", c.d, got, c.want)
		}
		if back, err := time.ParseDuration(FormatDuration(c.d)); err != nil || back != c.d {
			t.Errorf("ParseDuration(%q) = %v, %v; want %v", FormatDuration(c.d), back, err, c.d)
		}
	}
}

func TestPolicyJSON(t *testing.T) {
	decisions := decision.Policy{Quorum: decision.Quorum{Low: 1, Medium: 1, High: 2}, RemindAfter: time.Hour, EscalateAfter: 4 * time.Hour, ExpireAfter: 24 * time.Hour, Persons: map[string]string{"slack:U123": "ana"}}
	t.Run("DurationsAsText", func(t *testing.T) {
		b, err := json.Marshal(Policy{
			AckTimeouts:      map[amp.Type]time.Duration{amp.TypeTaskDispatch: 5 * time.Minute, amp.TypeReviewRequest: 10 * time.Minute},
			HeartbeatTimeout: 30 * time.Minute, CIPollInterval: 30 * time.Second, CITimeout: 30 * time.Minute, MaxRejects: 3,
			Decisions: decisions,
		})
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{`"task_dispatch":"5m"`, `"review_request":"10m"`, `"heartbeat_timeout":"30m"`,
			`"ci_poll_interval":"30s"`, `"ci_timeout":"30m"`, `"max_rejects":3`, `"remind_after":"1h"`, `"expire_after":"24h"`} {
			if !strings.Contains(string(b), want) {
				t.Errorf("policy JSON lacks %s: %s", want, b)
			}
		}
		if strings.Contains(string(b), "000000000") {
			t.Errorf("policy JSON has nanoseconds: %s", b)
		}
		var back Policy
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatal(err)
		}
		if back.AckTimeout(amp.TypeTaskDispatch) != 5*time.Minute || back.CITimeout != 30*time.Minute || back.MaxRejects != 3 ||
			!reflect.DeepEqual(back.Decisions, decisions) {
			t.Errorf("round trip lost values: %+v", back)
		}
	})
	t.Run("NanosecondsOfEarlierTasks", func(t *testing.T) {
		old := `{"ack_timeouts":{"task_dispatch":300000000000},"heartbeat_timeout":1800000000000,"max_rejects":2,"admins":["ana"]}`
		var p Policy
		if err := json.Unmarshal([]byte(old), &p); err != nil {
			t.Fatal(err)
		}
		if p.AckTimeout(amp.TypeTaskDispatch) != 300*time.Second || p.HeartbeatTimeout != 30*time.Minute || p.MaxRejects != 2 || !p.IsAdmin("ana") {
			t.Errorf("old policy read as %+v", p)
		}
	})
	t.Run("BadText", func(t *testing.T) {
		var p Policy
		if err := json.Unmarshal([]byte(`{"ci_timeout":"soon"}`), &p); err == nil {
			t.Error("a duration of \"soon\" was accepted")
		}
	})
}
