package workers

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ampflow/ampflow/activities/delivery"
	"github.com/ampflow/ampflow/activities/runner"
	"github.com/ampflow/ampflow/activities/ssot"
	"github.com/ampflow/ampflow/integrations/httpapi"
	"github.com/ampflow/ampflow/integrations/httpapi/httpapitest"
	"github.com/ampflow/ampflow/integrations/transcripts"
)

// BenchmarkTranscriptLatency measures how long an event takes from the
// run's reader (the moment the decoded line is handed on, as a CLI's
// line is) to a GET /v1/tasks/{id}/transcript?follow=1 reader, with 1 and
// 10 runs writing at once on one SQLite store, each run with its own
// follower. Each run sends b.N events, one every 20 ms. It reports the
// p50 and p99 latency in milliseconds.
//
//	go test ./workers/ -run '^$' -bench BenchmarkTranscriptLatency -benchtime 100x
func BenchmarkTranscriptLatency(b *testing.B) {
	for _, runs := range []int{1, 10} {
		b.Run(fmt.Sprintf("runs=%d", runs), func(b *testing.B) {
			db, err := ssot.Open(context.Background(), filepath.Join(b.TempDir(), "ampflow.db"))
			if err != nil {
				b.Fatal(err)
			}
			defer db.Close()
			api := httpapi.New(httpapi.Options{Store: db, Rate: -1})
			transcripts.Register(api, transcripts.Options{Store: db})
			url := httpapitest.Serve(b, api)
			d := &delivery.Delivery{Transcripts: db, Log: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))}
			var mu sync.Mutex
			var lat []time.Duration
			var wg sync.WaitGroup
			b.ResetTimer()
			for r := range runs {
				id := fmt.Sprintf("T-2026-%03d", r+1)
				ready := make(chan struct{})
				wg.Add(2)
				go func() {
					defer wg.Done()
					got := follow(b, url, id, b.N, ready)
					mu.Lock()
					lat = append(lat, got...)
					mu.Unlock()
				}()
				go func() {
					defer wg.Done()
					<-ready
					tw := d.StartTranscript(context.Background(), id, "executor", runner.Spec{Runner: runner.Codex})
					for range b.N {
						tw.Event(runner.Event{Kind: runner.EventText, Text: "sent=" + strconv.FormatInt(time.Now().UnixNano(), 10)})
						time.Sleep(20 * time.Millisecond)
					}
					tw.End(runner.Outcome{}, nil)
				}()
			}
			wg.Wait()
			b.StopTimer()
			slices.Sort(lat)
			if len(lat) == 0 {
				b.Fatal("no entry reached a follower")
			}
			q := func(p float64) float64 { return float64(lat[int(p*float64(len(lat)-1))].Microseconds()) / 1000 }
			b.ReportMetric(q(0.50), "p50-ms")
			b.ReportMetric(q(0.99), "p99-ms")
			b.ReportMetric(float64(len(lat)), "entries")
			if len(lat) != runs*b.N {
				b.Errorf("%d of %d entries reached a follower", len(lat), runs*b.N)
			}
		})
	}
}

// follow reads a task's transcript stream until it has n text entries or
// the run's end, returning each one's latency from the time it carries.
func follow(b *testing.B, url, id string, n int, ready chan<- struct{}) []time.Duration {
	req, _ := http.NewRequest("GET", url+"/v1/tasks/"+id+"/transcript?follow=1", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		b.Error(err)
		close(ready)
		return nil
	}
	defer resp.Body.Close()
	close(ready)
	var out []time.Duration
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() && len(out) < n {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		var e ssot.TranscriptEntry
		if json.Unmarshal([]byte(data), &e) != nil {
			continue
		}
		if e.Kind == ssot.TranscriptEnd {
			break
		}
		if e.Kind != ssot.TranscriptText {
			continue
		}
		sent, err := strconv.ParseInt(strings.TrimPrefix(e.Text, "sent="), 10, 64)
		if err == nil {
			out = append(out, time.Since(time.Unix(0, sent)))
		}
	}
	return out
}
