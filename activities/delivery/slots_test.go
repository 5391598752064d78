package delivery

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestSlots(t *testing.T) {
	s := NewSlots(2)
	ctx := context.Background()
	_, r1, err := s.Take(ctx, SlotRun{TaskID: "T-1"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, r2, _ := s.Take(ctx, SlotRun{TaskID: "T-2"}, nil)

	// Both slots are taken: three more wait, served by priority, then age.
	got := make(chan string, 3)
	want := func(id string, prio int) {
		queued := len(s.View().Queue)
		go func() {
			_, release, err := s.Take(ctx, SlotRun{TaskID: id, Priority: prio}, nil)
			if err != nil {
				t.Error(err)
				return
			}
			got <- id
			release()
		}()
		for len(s.View().Queue) == queued { // queued before the next one asks
			time.Sleep(time.Millisecond)
		}
	}
	want("T-3", 0)
	want("T-4", 0)
	want("T-5", 5)
	v := s.View()
	if v.Slots != 2 || len(v.Running) != 2 || len(v.Queue) != 3 || v.Queue[0].TaskID != "T-5" || v.Queue[1].TaskID != "T-3" {
		t.Fatalf("view = %+v", v)
	}
	select {
	case id := <-got:
		t.Fatalf("%s started with every slot taken", id)
	default:
	}
	r1()
	r1() // a second release gives nothing back
	if id := <-got; id != "T-5" {
		t.Fatalf("first served %s, want T-5 (priority 5)", id)
	}
	for _, want := range []string{"T-3", "T-4"} {
		if id := <-got; id != want {
			t.Fatalf("served %s, want %s", id, want)
		}
	}
	r2()
	if v := s.View(); len(v.Running) != 0 || len(v.Queue) != 0 {
		t.Fatalf("after every release: %+v", v)
	}
}

func TestSlotsCancelled(t *testing.T) {
	s := NewSlots(1)
	_, release, _ := s.Take(context.Background(), SlotRun{TaskID: "T-1"}, nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() {
		_, _, err := s.Take(ctx, SlotRun{TaskID: "T-2"}, func(int) { cancel() })
		done <- err
	}()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("Take = %v, want context.Canceled", err)
	}
	if v := s.View(); len(v.Queue) != 0 {
		t.Fatalf("a cancelled run stayed queued: %+v", v.Queue)
	}
	release()
	// The slot it would have had is free.
	if _, r, err := s.Take(context.Background(), SlotRun{TaskID: "T-3"}, func(int) { t.Error("T-3 waited for a free slot") }); err != nil {
		t.Fatal(err)
	} else {
		r()
	}
}

func TestNilSlots(t *testing.T) {
	var s *Slots
	_, release, err := s.Take(context.Background(), SlotRun{TaskID: "T-1"}, func(int) { t.Error("waited without slots") })
	if err != nil {
		t.Fatal(err)
	}
	release()
	if v := s.View(); v.Slots != 0 || len(v.Running) != 0 {
		t.Fatalf("view = %+v", v)
	}
}

// TestSlotsChanged: taking a slot, queueing for one and giving one back
// each close the channel Changed returned before.
func TestSlotsChanged(t *testing.T) {
	s := NewSlots(1)
	ctx := context.Background()
	closed := func(c <-chan struct{}) bool {
		select {
		case <-c:
			return true
		default:
			return false
		}
	}
	c := s.Changed()
	_, release, err := s.Take(ctx, SlotRun{TaskID: "T-1"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !closed(c) {
		t.Fatal("taking a free slot did not signal a change")
	}
	c = s.Changed()
	if closed(c) {
		t.Fatal("Changed is closed with no change since")
	}
	queued := make(chan struct{})
	got := make(chan func())
	go func() {
		_, r, _ := s.Take(ctx, SlotRun{TaskID: "T-2"}, func(int) {
			select {
			case <-queued:
			default:
				close(queued)
			}
		})
		got <- r
	}()
	<-queued
	if !closed(c) {
		t.Fatal("queueing did not signal a change")
	}
	c = s.Changed()
	release()
	if !closed(c) {
		t.Fatal("giving a slot back did not signal a change")
	}
	(<-got)()
	var none *Slots
	if none.Changed() != nil {
		t.Error("a nil Slots has a change channel")
	}
}
