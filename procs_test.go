package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// The boost raises GOMAXPROCS on the first batch, once, and restores it
// after idleAfter without batches, not before.
func TestProcsBoost(t *testing.T) {
	t.Parallel()
	var (
		mu    sync.Mutex
		procs = 1
		calls []int
		clock atomic.Int64
	)
	set := func(n int) int {
		mu.Lock()
		defer mu.Unlock()
		old := procs
		procs = n
		calls = append(calls, n)
		return old
	}
	get := func() int {
		mu.Lock()
		defer mu.Unlock()
		return procs
	}
	start := time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC)
	clock.Store(start.UnixNano())
	b := &procsBoost{set: set, now: func() time.Time { return time.Unix(0, clock.Load()) }, idleAfter: 30 * time.Millisecond,
		log: slog.New(slog.DiscardHandler), base: 1}
	defer b.stop()

	b.batch(3)
	b.batch(5)
	if got := get(); got != 2 {
		t.Fatalf("GOMAXPROCS after batches: got %d, want 2", got)
	}
	// The timer fires after 30 ms of real time, but the injected clock says
	// a batch came 20 ms ago: the check must look again, not lower.
	clock.Store(start.Add(20 * time.Millisecond).UnixNano())
	b.batch(1)
	time.Sleep(50 * time.Millisecond) // lets the first check run; the clock, not the sleep, decides
	if got := get(); got != 2 {
		t.Fatalf("GOMAXPROCS lowered although a batch came %v before the check", 30*time.Millisecond)
	}
	clock.Store(start.Add(time.Second).UnixNano())
	waitFor(t, "GOMAXPROCS to be restored", func() bool { return get() == 1 })
	mu.Lock()
	defer mu.Unlock()
	if !slices.Equal(calls, []int{2, 1}) {
		t.Errorf("GOMAXPROCS calls: got %v, want [2 1]", calls)
	}
}

func TestNewProcsBoostNotNeeded(t *testing.T) {
	t.Parallel()
	if b := newProcsBoost(2, slog.New(slog.DiscardHandler)); b != nil {
		t.Errorf("a boost with GOMAXPROCS already 2")
	}
}

// The real binary on one CPU: with a journal, the first create raises
// GOMAXPROCS; with :memory:, or with GOMAXPROCS set explicitly, nothing does.
func TestRunBoostsProcsForJournalWrites(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	taskset, err := exec.LookPath("taskset")
	if err != nil {
		t.Skip("taskset is not installed")
	}
	bin := buildPetstore(t)
	dir := t.TempDir()
	tests := []struct {
		name        string
		env         []string
		wantBoosted bool
	}{
		{"journal", []string{"PETSTORE_DATA=" + filepath.Join(dir, "a.jsonl")}, true},
		{"memory", []string{"PETSTORE_DATA=" + memoryPath}, false},
		{"journal with GOMAXPROCS=1", []string{"PETSTORE_DATA=" + filepath.Join(dir, "b.jsonl"), "GOMAXPROCS=1"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, taskset, "-c", "0", bin)
			cmd.Env = slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "GOMAXPROCS=") })
			cmd.Env = append(cmd.Env, "PETSTORE_ADDR=127.0.0.1:0", "PETSTORE_API_KEYS="+crashKey)
			cmd.Env = append(cmd.Env, tt.env...)
			stderr, err := cmd.StderrPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer func() {
				cmd.Process.Kill()
				cmd.Wait()
			}()
			lines := make(chan map[string]any, 100)
			go func() {
				defer close(lines)
				sc := bufio.NewScanner(stderr)
				for sc.Scan() {
					var line map[string]any
					if json.Unmarshal(sc.Bytes(), &line) == nil {
						lines <- line
					}
				}
				io.Copy(io.Discard, stderr)
			}()
			next := func(d time.Duration) map[string]any {
				select {
				case l := <-lines:
					return l
				case <-time.After(d):
					return nil
				}
			}
			var addr string
			for l := next(10 * time.Second); l != nil; l = next(10 * time.Second) {
				if l["msg"] == "listening" {
					addr, _ = l["addr"].(string)
					break
				}
			}
			if addr == "" {
				t.Fatalf("petstore did not start listening")
			}
			req, _ := http.NewRequest("POST", "http://"+addr+"/v1/categories", strings.NewReader(`{"name":"dog"}`))
			req.Header.Set("Authorization", "Bearer "+crashKey)
			req.Header.Set("Content-Type", "application/json")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusCreated {
				t.Fatalf("create: got %d, want 201", resp.StatusCode)
			}
			// The boost is logged before the create's 201; the access line
			// of the create follows within the log's flush delay.
			boosted := false
			for l := next(2 * logFlushDelay); l != nil; l = next(2 * logFlushDelay) {
				if strings.HasPrefix(l["msg"].(string), "journal writes: GOMAXPROCS raised") && l["gomaxprocs"] == float64(2) {
					boosted = true
				}
				if l["msg"] == "request" {
					break
				}
			}
			if boosted != tt.wantBoosted {
				t.Errorf("GOMAXPROCS raised: got %v, want %v", boosted, tt.wantBoosted)
			}
		})
	}
}
