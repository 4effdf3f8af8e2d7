package e2e

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

	"petstore/internal/petstoretest"
)

// TestCrashKeepsAcknowledgedCategories builds the real binary, drives
// concurrent creates, kills the process with SIGKILL mid-load, restarts it,
// and checks that every category that got a 201 is back with its id, and
// that new ids are greater. It repeats on the same journal.
func TestCrashKeepsAcknowledgedCategories(t *testing.T) {
	t.Parallel()
	dataPath := filepath.Join(t.TempDir(), "petstore.jsonl")
	acked := map[int64]string{} // every 201 ever, across iterations

	const iterations = 5
	deadline := time.Now().Add(40 * time.Second)
	for i := 0; i < iterations && time.Now().Before(deadline); i++ {
		p := petstoretest.Start(t, map[string]string{"PETSTORE_DATA": dataPath})
		checkAcknowledged(t, p, acked)
		for id, name := range loadUntilKilled(t, p, i, 20+rand.IntN(300)) {
			acked[id] = name
		}
	}
	p := petstoretest.Start(t, map[string]string{"PETSTORE_DATA": dataPath})
	checkAcknowledged(t, p, acked)
	p.Stop(t)
	t.Logf("%d acknowledged creates survived SIGKILLs", len(acked))
}

// loadUntilKilled runs concurrent creates and SIGKILLs the process once
// killAfter of them were acknowledged. It returns the acknowledged ones.
func loadUntilKilled(t *testing.T, p *petstoretest.Process, iteration, killAfter int) map[int64]string {
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
			p.Cmd.Process.Signal(syscall.SIGKILL)
			close(killed)
		})
	}
	for w := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; n < 10000 && ctx.Err() == nil; n++ {
				name := fmt.Sprintf("crash-%d-%d-%d", iteration, w, n)
				id, ok := createOverHTTP(ctx, client, p.URL(""), name, "")
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
	p.Wait(t, 10*time.Second)
	if len(acked) == 0 {
		t.Fatalf("iteration %d: no create was acknowledged", iteration)
	}
	return acked
}

// createOverHTTP creates a category named name, with an Idempotency-Key
// unless idemKey is "", and returns its id; false when no 201 came back.
func createOverHTTP(ctx context.Context, client *http.Client, base, name, idemKey string) (int64, bool) {
	req, err := petstoretest.NewAPIRequest(ctx, "POST", base+"/v1/categories", petstoretest.Key, `{"name":"`+name+`"}`)
	if err != nil {
		return 0, false
	}
	if idemKey != "" {
		req.Header.Set("Idempotency-Key", idemKey)
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, false
	}
	defer resp.Body.Close()
	var c petstoretest.Category
	if resp.StatusCode != http.StatusCreated || json.NewDecoder(resp.Body).Decode(&c) != nil {
		return 0, false
	}
	return c.ID, true
}

// checkAcknowledged lists the categories of p and checks that every
// acknowledged one is there with its id, and that a new one gets a greater id.
func checkAcknowledged(t *testing.T, p *petstoretest.Process, acked map[int64]string) {
	t.Helper()
	resp, body := petstoretest.Send(t, petstoretest.NewClient(t), "GET", p.URL("/v1/categories"), petstoretest.Key, "", nil)
	petstoretest.WantStatus(t, "list after restart", resp, body, http.StatusOK)
	var list []petstoretest.Category
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
	id, ok := createOverHTTP(context.Background(), http.DefaultClient, p.URL(""), fmt.Sprintf("after-restart-%d", len(list)), "")
	if !ok || id <= maxID {
		t.Fatalf("create after restart: id %d (ok %v), want greater than %d", id, ok, maxID)
	}
	acked[id] = fmt.Sprintf("after-restart-%d", len(list))
}

// kill -9 during creates sent with Idempotency-Keys, restart, retry every
// key: each create whose 201 was seen replays the same id; each one never
// answered either replays (it was committed) or creates once; nothing is
// created twice (docs/api.md, "Safe retries").
func TestCrashKeepsIdempotencyKeys(t *testing.T) {
	t.Parallel()
	dataPath := filepath.Join(t.TempDir(), "petstore.jsonl")
	p := petstoretest.Start(t, map[string]string{"PETSTORE_DATA": dataPath})
	client := &http.Client{Timeout: 5 * time.Second}
	type attempt struct {
		name  string
		acked int64 // the id its 201 gave; 0: no answer seen
	}
	var (
		mu       sync.Mutex
		attempts = map[string]*attempt{} // by Idempotency-Key
		wg       sync.WaitGroup
		killOnce sync.Once
	)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	killAfter := 50 + rand.IntN(200)
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; n < 2000 && ctx.Err() == nil; n++ {
				key, name := fmt.Sprintf("k-%d-%d", w, n), fmt.Sprintf("keyed-%d-%d", w, n)
				mu.Lock()
				attempts[key] = &attempt{name: name}
				mu.Unlock()
				id, ok := createOverHTTP(ctx, client, p.URL(""), name, key)
				if !ok {
					return // the process is gone
				}
				mu.Lock()
				attempts[key].acked = id
				acked := 0
				for _, a := range attempts {
					if a.acked != 0 {
						acked++
					}
				}
				mu.Unlock()
				if acked >= killAfter {
					killOnce.Do(func() { p.Signal(t, syscall.SIGKILL) })
				}
			}
		}()
	}
	wg.Wait()
	killOnce.Do(func() { p.Signal(t, syscall.SIGKILL) })
	p.Wait(t, 10*time.Second)

	p2 := petstoretest.Start(t, map[string]string{"PETSTORE_DATA": dataPath})
	replayed, fresh := 0, 0
	for key, a := range attempts {
		resp, body := petstoretest.Send(t, petstoretest.NewClient(t), "POST", p2.URL("/v1/categories"), petstoretest.Key, `{"name":"`+a.name+`"}`, map[string]string{"Idempotency-Key": key})
		petstoretest.WantStatus(t, "retry of "+key, resp, body, http.StatusCreated)
		var c petstoretest.Category
		json.Unmarshal(body, &c)
		isReplay := resp.Header.Get("Idempotent-Replayed") == "true"
		switch {
		case a.acked != 0 && (!isReplay || c.ID != a.acked):
			t.Errorf("%s was answered 201 with id %d; its retry: id %d, replayed %v", key, a.acked, c.ID, isReplay)
		case isReplay:
			replayed++
		default:
			fresh++
		}
	}
	resp, body := petstoretest.Send(t, petstoretest.NewClient(t), "GET", p2.URL("/v1/categories"), petstoretest.Key, "", nil)
	petstoretest.WantStatus(t, "list", resp, body, http.StatusOK)
	var list []petstoretest.Category
	json.Unmarshal(body, &list)
	seen := map[string]bool{}
	for _, c := range list {
		if seen[c.Name] {
			t.Errorf("%q is in the list twice", c.Name)
		}
		seen[c.Name] = true
	}
	if len(list) != len(attempts) {
		t.Errorf("categories: got %d, want %d, one per key", len(list), len(attempts))
	}
	t.Logf("%d keys: %d retries replayed, %d created afresh after the kill", len(attempts), replayed, fresh)
	p2.Stop(t)
}
