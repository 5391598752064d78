package workflows

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/ampflow/ampflow/activities/ssot"
	"github.com/ampflow/ampflow/amp/task"
)

// countingTasks starts tasks T-2026-001, -002, … and counts the starts.
type countingTasks struct {
	Tasks
	mu   sync.Mutex
	keys []string
}

func (c *countingTasks) StartNext(_ context.Context, in task.Input, year int) (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.keys = append(c.keys, in.RequestKey)
	time.Sleep(20 * time.Millisecond) // a start takes a while: others wait on the claim
	return fmt.Sprintf("T-%d-%03d", year, len(c.keys)), nil
}

func (c *countingTasks) starts() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.keys)
}

func originStore(t *testing.T) *ssot.DB {
	t.Helper()
	db, err := ssot.Open(context.Background(), filepath.Join(t.TempDir(), "ampflow.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func TestStartOnce(t *testing.T) {
	ctx := context.Background()
	in := func(id string) task.Input {
		return task.Input{Origin: &task.Origin{Source: "github", ExternalID: id}}
	}
	t.Run("Concurrent", func(t *testing.T) {
		tasks, db := &countingTasks{}, originStore(t)
		var wg sync.WaitGroup
		ids := make([]string, 6)
		started := make([]bool, 6)
		for i := range ids {
			wg.Add(1)
			go func() {
				defer wg.Done()
				var err error
				if ids[i], started[i], err = StartOnce(ctx, tasks, db, in("acme/widget#1"), 2026); err != nil {
					t.Error(err)
				}
			}()
		}
		wg.Wait()
		n := 0
		for i, id := range ids {
			if id != "T-2026-001" {
				t.Errorf("start %d answered %q", i, id)
			}
			if started[i] {
				n++
			}
		}
		if tasks.starts() != 1 || n != 1 {
			t.Errorf("%d starts, %d said started; want 1 and 1", tasks.starts(), n)
		}
		if tasks.keys[0] != originKey(task.Origin{Source: "github", ExternalID: "acme/widget#1"}) {
			t.Errorf("the start's request key is %q, not the origin's", tasks.keys[0])
		}
	})
	t.Run("WaitsForTheClaimant", func(t *testing.T) {
		tasks, db := &countingTasks{}, originStore(t)
		if _, _, err := db.ClaimOrigin(ctx, ssot.Origin{Source: "github", ExternalID: "acme/widget#2", ClaimedAt: time.Now()}); err != nil {
			t.Fatal(err)
		}
		go func() {
			time.Sleep(300 * time.Millisecond)
			db.SetOriginTask(ctx, "github", "acme/widget#2", "T-2026-040")
		}()
		id, started, err := StartOnce(ctx, tasks, db, in("acme/widget#2"), 2026)
		if err != nil || id != "T-2026-040" || started || tasks.starts() != 0 {
			t.Errorf("StartOnce = %q, %v, %v with %d starts; want the claimant's task", id, started, err, tasks.starts())
		}
	})
	t.Run("TakesOverADeadClaim", func(t *testing.T) {
		tasks, db := &countingTasks{}, originStore(t)
		if _, _, err := db.ClaimOrigin(ctx, ssot.Origin{Source: "github", ExternalID: "acme/widget#3", ClaimedAt: time.Now().Add(-OriginClaimWait - time.Second)}); err != nil {
			t.Fatal(err)
		}
		id, started, err := StartOnce(ctx, tasks, db, in("acme/widget#3"), 2026)
		if err != nil || id != "T-2026-001" || !started || tasks.starts() != 1 {
			t.Errorf("StartOnce = %q, %v, %v with %d starts; want a start", id, started, err, tasks.starts())
		}
		if o, err := db.Origin(ctx, "github", "acme/widget#3"); err != nil || o.TaskID != id {
			t.Errorf("the claim names %q (%v), want %s", o.TaskID, err, id)
		}
	})
	t.Run("NoOrigin", func(t *testing.T) {
		if _, _, err := StartOnce(ctx, &countingTasks{}, originStore(t), task.Input{}, 2026); err == nil {
			t.Error("a start without an origin was taken")
		}
	})
}
