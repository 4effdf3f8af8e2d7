package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

const crashKey = "crash-test-key"

// TestCrashKeepsAcknowledgedCategories builds the real binary, drives
// concurrent creates, kills the process with SIGKILL mid-load, restarts it,
// and checks that every category that got a 201 is back with its id, and
// that new ids are greater. It repeats on the same journal.
func TestCrashKeepsAcknowledgedCategories(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := buildPetstore(t)
	dataPath := filepath.Join(t.TempDir(), "petstore.jsonl")
	acked := map[int64]string{} // every 201 ever, across iterations

	const iterations = 5
	deadline := time.Now().Add(40 * time.Second)
	for i := 0; i < iterations && time.Now().Before(deadline); i++ {
		p := startPetstore(t, bin, dataPath)
		checkAcknowledged(t, p, acked)
		for id, name := range loadUntilKilled(t, p, i, 20+rand.IntN(300)) {
			acked[id] = name
		}
	}
	p := startPetstore(t, bin, dataPath)
	checkAcknowledged(t, p, acked)
	p.stop(t)
	t.Logf("%d acknowledged creates survived SIGKILLs", len(acked))
}

// petstoreProcess is a petstore binary this test started.
type petstoreProcess struct {
	cmd  *exec.Cmd
	base string // http://127.0.0.1:port
	done chan error
}

func buildPetstore(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "petstore")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// startPetstore starts the binary on 127.0.0.1:0 and waits until /healthz
// answers. The process is killed when the test ends, if still running.
func startPetstore(t *testing.T, bin, dataPath string) *petstoreProcess {
	t.Helper()
	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(), "PETSTORE_ADDR=127.0.0.1:0", "PETSTORE_DATA="+dataPath, "PETSTORE_API_KEYS="+crashKey)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &petstoreProcess{cmd: cmd, done: make(chan error, 1)}
	t.Cleanup(func() { cmd.Process.Kill() })

	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			var line struct{ Msg, Addr string }
			if json.Unmarshal(sc.Bytes(), &line) == nil && line.Msg == "listening" {
				addr <- line.Addr
			}
		}
		io.Copy(io.Discard, stderr)
		p.done <- cmd.Wait()
	}()
	select {
	case a := <-addr:
		p.base = "http://" + a
	case err := <-p.done:
		t.Fatalf("petstore exited at start: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatalf("petstore did not start listening within 10 s")
	}
	for i := 0; ; i++ {
		resp, err := http.Get(p.base + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return p
			}
		}
		if i == 100 {
			t.Fatalf("/healthz did not answer 200: %v", err)
		}
		time.Sleep(10 * time.Millisecond) // bounded retry of a readiness probe
	}
}

// stop sends SIGTERM and expects a clean exit.
func (p *petstoreProcess) stop(t *testing.T) {
	t.Helper()
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-p.done:
		if err != nil {
			t.Errorf("petstore exited with %v after SIGTERM, want exit 0", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatalf("petstore did not exit within 15 s of SIGTERM")
	}
}

// loadUntilKilled runs concurrent creates and SIGKILLs the process once
// killAfter of them were acknowledged. It returns the acknowledged ones.
func loadUntilKilled(t *testing.T, p *petstoreProcess, iteration, killAfter int) map[int64]string {
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
				id, ok := createOverHTTP(ctx, client, p.base, name)
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
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		t.Fatalf("petstore did not die after SIGKILL")
	}
	if len(acked) == 0 {
		t.Fatalf("iteration %d: no create was acknowledged", iteration)
	}
	return acked
}

func createOverHTTP(ctx context.Context, client *http.Client, base, name string) (int64, bool) {
	req, _ := http.NewRequestWithContext(ctx, "POST", base+"/v1/categories", strings.NewReader(`{"name":"`+name+`"}`))
	req.Header.Set("Authorization", "Bearer "+crashKey)
	req.Header.Set("Content-Type", "application/json")
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
func checkAcknowledged(t *testing.T, p *petstoreProcess, acked map[int64]string) {
	t.Helper()
	req, _ := http.NewRequest("GET", p.base+"/v1/categories", nil)
	req.Header.Set("Authorization", "Bearer "+crashKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var list []categoryBody
	err = json.NewDecoder(resp.Body).Decode(&list)
	resp.Body.Close()
	if err != nil {
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
	id, ok := createOverHTTP(context.Background(), http.DefaultClient, p.base, fmt.Sprintf("after-restart-%d", len(list)))
	if !ok || id <= maxID {
		t.Fatalf("create after restart: id %d (ok %v), want greater than %d", id, ok, maxID)
	}
	acked[id] = fmt.Sprintf("after-restart-%d", len(list))
}
