package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"
)

// TestCrashKeepsAcknowledgedCategories builds the real binary, drives
// concurrent creates, kills the process with SIGKILL mid-load, restarts it,
// and checks that every category that got a 201 is back with its id, and
// that new ids are greater. It repeats on the same journal.
func TestCrashKeepsAcknowledgedCategories(t *testing.T) {
	dataPath := filepath.Join(t.TempDir(), "petstore.jsonl")
	acked := map[int64]string{} // every 201 ever, across iterations

	const iterations = 5
	deadline := time.Now().Add(40 * time.Second)
	for i := 0; i < iterations && time.Now().Before(deadline); i++ {
		p := startBinary(t, map[string]string{"PETSTORE_DATA": dataPath})
		checkAcknowledged(t, p, acked)
		for id, name := range loadUntilKilled(t, p, i, 20+rand.IntN(300)) {
			acked[id] = name
		}
	}
	p := startBinary(t, map[string]string{"PETSTORE_DATA": dataPath})
	checkAcknowledged(t, p, acked)
	p.stop(t)
	t.Logf("%d acknowledged creates survived SIGKILLs", len(acked))
}

// loadUntilKilled runs concurrent creates and SIGKILLs the process once
// killAfter of them were acknowledged. It returns the acknowledged ones.
func loadUntilKilled(t *testing.T, p *binaryProcess, iteration, killAfter int) map[int64]string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	client := &http.Client{Timeout: 5 * time.Second}
	var (
		mu    sync.Mutex
		acked = map[int64]string{}
		wg    sync.WaitGroup
	)
	killed := make(chan struct{})
	var killOnce sync.Once
	kill := func() {
		killOnce.Do(func() {
			p.cmd.Process.Signal(syscall.SIGKILL)
			close(killed)
		})
	}
	for w := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; n < 10000 && ctx.Err() == nil; n++ {
				name := fmt.Sprintf("crash-%d-%d-%d", iteration, w, n)
				id, ok := createOverHTTP(ctx, client, p.url(""), name)
				select {
				case <-killed:
					if !ok {
						return
					}
				default:
				}
				if !ok {
					continue
				}
				mu.Lock()
				acked[id] = name
				enough := len(acked) >= killAfter
				mu.Unlock()
				if enough {
					kill()
				}
			}
		}()
	}
	wg.Wait()
	kill()
	p.wait(t, 10*time.Second)
	if len(acked) == 0 {
		t.Fatalf("iteration %d: no create was acknowledged", iteration)
	}
	return acked
}

func createOverHTTP(ctx context.Context, client *http.Client, base, name string) (int64, bool) {
	req, err := newAPIRequest(ctx, "POST", base+"/v1/categories", binKey, `{"name":"`+name+`"}`)
	if err != nil {
		return 0, false
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, false
	}
	defer resp.Body.Close()
	var c categoryBody
	if resp.StatusCode != http.StatusCreated || json.NewDecoder(resp.Body).Decode(&c) != nil {
		return 0, false
	}
	return c.ID, true
}

// checkAcknowledged lists the categories of p and checks that every
// acknowledged one is there with its id, and that a new one gets a greater id.
func checkAcknowledged(t *testing.T, p *binaryProcess, acked map[int64]string) {
	t.Helper()
	resp, body := send(t, newClient(t), "GET", p.url("/v1/categories"), binKey, "", nil)
	wantStatus(t, "list after restart", resp, body, http.StatusOK)
	var list []categoryBody
	if err := json.Unmarshal(body, &list); err != nil {
		t.Fatalf("list after restart: %v", err)
	}
	byID := map[int64]string{}
	var maxID int64
	for i, c := range list {
		if i > 0 && c.ID <= list[i-1].ID {
			t.Fatalf("list not strictly ascending at %d: %d after %d", i, c.ID, list[i-1].ID)
		}
		byID[c.ID] = c.Name
		maxID = c.ID
	}
	for id, name := range acked {
		if byID[id] != name {
			t.Fatalf("acknowledged category %d %q: after restart got %q", id, name, byID[id])
		}
	}
	id, ok := createOverHTTP(context.Background(), http.DefaultClient, p.url(""), fmt.Sprintf("after-restart-%d", len(list)))
	if !ok || id <= maxID {
		t.Fatalf("create after restart: id %d (ok %v), want greater than %d", id, ok, maxID)
	}
	acked[id] = fmt.Sprintf("after-restart-%d", len(list))
}
