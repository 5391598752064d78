package fleet

import (
	"context"
	"encoding/json"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ampflow/ampflow/activities/ssot"
	"github.com/ampflow/ampflow/config"
	"github.com/ampflow/ampflow/integrations/httpapi"
	"github.com/ampflow/ampflow/integrations/httpapi/httpapitest"
)

func TestFleet(t *testing.T) {
	store, _ := httpapitest.Store(t)
	now := time.Now().UTC().Truncate(time.Second)
	ctx := context.Background()
	runs := `{"slots":2,"running":[{"task_id":"T-2026-001","role":"executor","runner":"codex","priority":0,"queued_at":"` +
		now.Add(-time.Minute).Format(time.RFC3339) + `","started_at":"` + now.Add(-50*time.Second).Format(time.RFC3339) +
		`","step":"tool Bash","cost_usd":0.25}],"queue":[{"task_id":"T-2026-002","role":"reviewer","runner":"claude","priority":3,"queued_at":"` +
		now.Add(-10*time.Second).Format(time.RFC3339) + `","cost_usd":0}]}`
	for _, h := range []ssot.Host{
		{Host: "alpha", Slots: 2, Runs: json.RawMessage(runs), StartedAt: now.Add(-time.Hour), SeenAt: now.Add(-2 * time.Second)},
		{Host: "beta", Slots: 4, Runs: json.RawMessage(`{"slots":4,"running":[{"task_id":"T-2026-003"}],"queue":[]}`), StartedAt: now.Add(-time.Hour), SeenAt: now.Add(-time.Minute)},
		{Host: "gamma", Slots: 1, Runs: json.RawMessage(`{}`), StartedAt: now.Add(-3 * time.Hour), SeenAt: now.Add(-2 * time.Hour)},
	} {
		if err := store.SaveHost(ctx, h); err != nil {
			t.Fatal(err)
		}
	}
	api := httpapi.New(httpapi.Options{Store: store, Tokens: []config.AuthToken{{Name: "ops", Token: "admin-token", Role: "admin"}}})
	Register(api, Options{Store: store, Now: func() time.Time { return now }})
	url := httpapitest.Serve(t, api)

	if r := httpapitest.Do(t, "GET", url+"/v1/fleet", "", nil); r.Status != http.StatusUnauthorized {
		t.Fatalf("without a token: %d", r.Status)
	}
	r := httpapitest.Do(t, "GET", url+"/v1/fleet", "admin-token", nil)
	if r.Status != http.StatusOK {
		t.Fatalf("GET /v1/fleet: %d %s", r.Status, r.Body)
	}
	var f Response
	if err := json.Unmarshal(r.Body, &f); err != nil {
		t.Fatal(err)
	}
	// gamma, silent for two hours, is left out; beta, silent for a
	// minute, is gone and not counted.
	if len(f.Hosts) != 2 || f.Hosts[0].Host != "alpha" || f.Hosts[1].Host != "beta" {
		t.Fatalf("hosts = %+v", f.Hosts)
	}
	a, b := f.Hosts[0], f.Hosts[1]
	if !a.Alive || b.Alive || a.InUse != 1 || len(a.Queue) != 1 || f.Running != 1 || f.Queued != 1 {
		t.Fatalf("fleet = %+v", f)
	}
	run, queued := a.Running[0], a.Queue[0]
	if run.TaskID != "T-2026-001" || run.Step != "tool Bash" || run.CostUSD != 0.25 || run.For != 50 {
		t.Fatalf("running = %+v", run)
	}
	if queued.TaskID != "T-2026-002" || queued.Priority != 3 || !queued.Started.IsZero() || queued.For != 10 {
		t.Fatalf("queued = %+v", queued)
	}
}

// TestSchemasMatchGoTypes ties each schema to the Go type it describes:
// the same properties, and every property always written required.
func TestSchemasMatchGoTypes(t *testing.T) {
	for name, v := range map[string]any{"FleetResponse": Response{}, "FleetHost": Host{}, "FleetRun": Run{}} {
		s := schemas[name].(map[string]any)
		var props, required []string
		for p := range s["properties"].(map[string]any) {
			props = append(props, p)
		}
		required = append(required, s["required"].([]string)...)
		all, always := jsonFields(reflect.TypeOf(v))
		for _, l := range [][]string{props, required, all, always} {
			slices.Sort(l)
		}
		if !slices.Equal(props, all) || !slices.Equal(required, always) {
			t.Errorf("%s: properties %v required %v; the Go type has %v, always %v", name, props, required, all, always)
		}
	}
}

// jsonFields are the JSON names of t's fields, an embedded struct's
// among them, and those written whatever their value.
func jsonFields(t reflect.Type) (all, always []string) {
	for i := range t.NumField() {
		f := t.Field(i)
		if f.Anonymous && f.Type.Kind() == reflect.Struct && f.Tag.Get("json") == "" {
			a, w := jsonFields(f.Type)
			all, always = append(all, a...), append(always, w...)
			continue
		}
		tag, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		if tag == "" || tag == "-" {
			continue
		}
		all = append(all, tag)
		if !strings.Contains(opts, "omit") {
			always = append(always, tag)
		}
	}
	return all, always
}
