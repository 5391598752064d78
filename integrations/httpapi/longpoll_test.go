package httpapi

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestPoll: the loop ends on the first look that is done or fails, at
// the end of the wait, or when the request ends, and looks once with no
// wait.
func TestPoll(t *testing.T) {
	failed := errors.New("store down")
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	for _, c := range []struct {
		name      string
		ctx       context.Context
		wait      time.Duration
		doneAt    int // the look that is done; 0 is never
		err       error
		wantLooks int // 0: more than one, over the whole wait
		wantErr   error
	}{
		{"Done", context.Background(), time.Second, 3, nil, 3, nil},
		{"Failed", context.Background(), time.Second, 0, failed, 1, failed},
		{"NoWait", context.Background(), 0, 0, nil, 1, nil},
		{"WaitOver", context.Background(), 25 * time.Millisecond, 0, nil, 0, nil},
		{"RequestEnded", ended, time.Second, 0, nil, 1, context.Canceled},
	} {
		t.Run(c.name, func(t *testing.T) {
			looks := 0
			start := time.Now()
			err := Poll(c.ctx, c.wait, 10*time.Millisecond, func() (bool, error) {
				looks++
				return looks == c.doneAt, c.err
			})
			if !errors.Is(err, c.wantErr) {
				t.Errorf("err %v, want %v", err, c.wantErr)
			}
			switch took := time.Since(start); {
			case c.wantLooks > 0 && looks != c.wantLooks:
				t.Errorf("%d looks, want %d", looks, c.wantLooks)
			case c.wantLooks == 0 && (looks < 2 || took < c.wait):
				t.Errorf("%d looks in %s: the wait of %s was not waited out", looks, took, c.wait)
			}
		})
	}
}
