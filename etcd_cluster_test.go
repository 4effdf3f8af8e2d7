package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"petstore/internal/catalog"
	"petstore/internal/etcd/etcdtest"
	"petstore/internal/journal"
	"petstore/internal/petstoretest"
)

// Integration tests against a real etcd cluster: three members on
// 127.0.0.1, free ports, data in t.TempDir(), started and stopped by the
// test itself. Without an etcd binary they skip loudly, unless
// PETSTORE_TEST_REQUIRE_ETCD=1 (set by .ci/run), which makes them fail.

// loadClient is an HTTP client for many concurrent requests to petstore.
func loadClient(t *testing.T) *http.Client {
	tr := &http.Transport{Proxy: nil, MaxIdleConnsPerHost: 256}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: 30 * time.Second}
}

// createVia posts a category named name to base and returns the status,
// the category (on 201), the Location and the Retry-After header.
func createVia(client *http.Client, base, key, name string) (int, petstoretest.Category, http.Header, error) {
	body, _ := json.Marshal(map[string]string{"name": name})
	req, err := petstoretest.NewAPIRequest(context.Background(), "POST", base+"/v1/categories", key, string(body))
	if err != nil {
		return 0, petstoretest.Category{}, nil, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, petstoretest.Category{}, nil, err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var c petstoretest.Category
	if resp.StatusCode == http.StatusCreated {
		if err := json.Unmarshal(b, &c); err != nil {
			return resp.StatusCode, c, resp.Header, fmt.Errorf("201 body %s: %v", b, err)
		}
	} else if resp.StatusCode >= 400 {
		var eb petstoretest.ErrorBody
		if err := json.Unmarshal(b, &eb); err != nil || eb.Status != resp.StatusCode || resp.Header.Get("Content-Type") != "application/json" {
			return resp.StatusCode, c, resp.Header, fmt.Errorf("status %d with a body that is not an Error: %s", resp.StatusCode, b)
		}
	}
	return resp.StatusCode, c, resp.Header, nil
}

// listVia returns the list of base, its ETag and status.
func listVia(t *testing.T, client *http.Client, base, key string) ([]petstoretest.Category, string, int) {
	t.Helper()
	req, err := petstoretest.NewAPIRequest(context.Background(), "GET", base+"/v1/categories", key, "")
	if err != nil {
		t.Fatal(err)
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("list %s: %v", base, err)
	}
	defer resp.Body.Close()
	var list []petstoretest.Category
	if resp.StatusCode == http.StatusOK {
		if err := json.NewDecoder(resp.Body).Decode(&list); err != nil {
			t.Fatalf("list %s: %v", base, err)
		}
	}
	return list, resp.Header.Get("Etag"), resp.StatusCode
}

// waitList polls base's list, bounded by within, until it has n
// categories, and returns it.
func waitList(t *testing.T, client *http.Client, base, key string, n int, within time.Duration) ([]petstoretest.Category, string) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		list, etag, status := listVia(t, client, base, key)
		if status == http.StatusOK && len(list) >= n || time.Now().After(deadline) {
			if len(list) < n {
				t.Fatalf("%s lists %d categories after %v, want %d", base, len(list), within, n)
			}
			return list, etag
		}
		time.Sleep(5 * time.Millisecond) // polling a condition, bounded by within
	}
}

// checkConsecutive checks that list holds ids 1..len(list) in order and no
// name twice (ignoring case).
func checkConsecutive(t *testing.T, list []petstoretest.Category) {
	t.Helper()
	names := map[string]int64{}
	for i, c := range list {
		if c.ID != int64(i+1) {
			t.Fatalf("list[%d] has id %d, want %d: ids must be 1..N without gap or duplicate", i, c.ID, i+1)
		}
		if other, dup := names[catalog.FoldName(c.Name)]; dup {
			t.Fatalf("name %q is in the list twice (ids %d and %d)", c.Name, other, c.ID)
		}
		names[catalog.FoldName(c.Name)] = c.ID
	}
}

// Two petstores on one prefix: ids 1..N across both, one 201 per name
// among racing creates, a Location from one followed on the other at once,
// and a create listed by the other within a second.
func TestEtcdTwoInstances(t *testing.T) {
	t.Parallel()
	cluster := etcdtest.Shared(t)
	a := startRun(t, baseEnv(cluster.Data("two")))
	b := startRun(t, baseEnv(cluster.Data("two")))
	bases := []string{a.url(""), b.url("")}
	client := loadClient(t)

	t.Run("ids 1..N across both", func(t *testing.T) {
		const workers, each = 16, 10
		var mu sync.Mutex
		var ids []int64
		var wg sync.WaitGroup
		for w := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range each {
					status, c, _, err := createVia(client, bases[(w+i)%2], e2eKey, fmt.Sprintf("seq-%d-%d", w, i))
					if err != nil || status != http.StatusCreated {
						t.Errorf("create: status %d, %v", status, err)
						return
					}
					mu.Lock()
					ids = append(ids, c.ID)
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		slices.Sort(ids)
		for i, id := range ids {
			if id != int64(i+1) {
				t.Fatalf("201 ids sorted: [%d] is %d, want %d (no gap, no duplicate)", i, id, i+1)
			}
		}
		listA, etagA := waitList(t, client, bases[0], e2eKey, len(ids), time.Second)
		listB, etagB := waitList(t, client, bases[1], e2eKey, len(ids), time.Second)
		checkConsecutive(t, listA)
		if len(listA) != len(listB) || etagA != etagB {
			t.Errorf("the two instances list %d (ETag %s) and %d (ETag %s) categories; want the same list, same ETag", len(listA), etagA, len(listB), etagB)
		}
	})

	t.Run("racing names", func(t *testing.T) {
		const goroutines, names = 200, 50
		var created [names]atomic.Int32
		var wg sync.WaitGroup
		start := make(chan struct{})
		for g := range goroutines {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				name := fmt.Sprintf("Race-%d", g%names)
				if g%3 == 0 {
					name = strings.ToUpper(name) // the same name, ignoring case
				}
				status, _, _, err := createVia(client, bases[g%2], e2eKey, name)
				switch {
				case err != nil:
					t.Errorf("create %s: %v", name, err)
				case status == http.StatusCreated:
					created[g%names].Add(1)
				case status != http.StatusConflict:
					t.Errorf("create %s: status %d, want 201 or 409", name, status)
				}
			}()
		}
		close(start)
		wg.Wait()
		for i := range created {
			if n := created[i].Load(); n != 1 {
				t.Errorf("name Race-%d: %d answers 201, want exactly 1", i, n)
			}
		}
		if t.Failed() {
			// What each instance logged beyond its access lines: why a
			// create got another answer.
			for i, svc := range []*service{a, b} {
				for _, line := range strings.Split(svc.stderr.String(), "\n") {
					if strings.Contains(line, `"level":"WARN"`) || strings.Contains(line, `"level":"ERROR"`) {
						t.Logf("instance %d: %s", i, petstoretest.Redact(line))
					}
				}
			}
		}
	})

	t.Run("idempotency key replays on the other instance", func(t *testing.T) {
		post := func(base, idemKey, name string) (*http.Response, []byte) {
			return petstoretest.Send(t, client, "POST", base+"/v1/categories", e2eKey, `{"name":"`+name+`"}`, map[string]string{"Idempotency-Key": idemKey})
		}
		first, body := post(bases[0], `"cross-1"`, "cross instance")
		petstoretest.WantStatus(t, "first create", first, body, http.StatusCreated)
		// At once on the other instance: its txn finds the key.
		again, againBody := post(bases[1], `"cross-1"`, "cross instance")
		petstoretest.WantStatus(t, "retry on the other instance", again, againBody, http.StatusCreated)
		if again.Header.Get("Idempotent-Replayed") != "true" || string(againBody) != string(body) || again.Header.Get("Location") != first.Header.Get("Location") {
			t.Errorf("retry on the other instance: %s (replayed %q, Location %q), want %s replayed at %s",
				againBody, again.Header.Get("Idempotent-Replayed"), again.Header.Get("Location"), body, first.Header.Get("Location"))
		}
		// And again there (etcd answers again: the key was made elsewhere).
		third, thirdBody := post(bases[1], `"cross-1"`, "cross instance")
		if third.Header.Get("Idempotent-Replayed") != "true" || string(thirdBody) != string(body) {
			t.Errorf("second retry on the other instance: %d %s", third.StatusCode, thirdBody)
		}
		other, otherBody := post(bases[1], `"cross-1"`, "another name")
		petstoretest.WantStatus(t, "the key with another request", other, otherBody, http.StatusUnprocessableEntity)
		// On the instance that made it, from its own table.
		mine, mineBody := post(bases[0], `"cross-1"`, "another name")
		petstoretest.WantStatus(t, "the key with another request where it was made", mine, mineBody, http.StatusUnprocessableEntity)
		// Racing one key on both instances: one category.
		var wg sync.WaitGroup
		type answer struct {
			status int
			body   []byte
		}
		answers := make(chan answer, 20)
		for i := range 20 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				resp, body := post(bases[i%2], `"cross-race"`, "raced by key")
				answers <- answer{resp.StatusCode, body}
			}()
		}
		wg.Wait()
		close(answers)
		for a := range answers {
			var eb petstoretest.ErrorBody
			json.Unmarshal(a.body, &eb)
			if a.status != http.StatusCreated && !(a.status == http.StatusConflict && eb.Code == codeIdempotencyKeyInUse) {
				t.Errorf("a raced create with one key: %d %s, want 201 (first or replay) or 409 idempotency_key_in_use", a.status, a.body)
			}
		}
		list, _ := waitList(t, client, bases[0], e2eKey, 1, time.Second)
		n := 0
		for _, c := range list {
			if c.Name == "raced by key" {
				n++
			}
		}
		if n != 1 {
			t.Errorf("categories made by one key raced on two instances: %d, want 1", n)
		}
	})
	t.Run("location and propagation", func(t *testing.T) {
		for i := range 5 {
			from, to := bases[i%2], bases[(i+1)%2]
			status, c, h, err := createVia(client, from, e2eKey, fmt.Sprintf("loc-%d", i))
			if err != nil || status != http.StatusCreated {
				t.Fatalf("create: %d %v", status, err)
			}
			created := time.Now()
			status, got, _ := getVia(t, client, to, h.Get("Location"), e2eKey)
			if status != http.StatusOK || !bytes.Contains(got, []byte(strconv.Quote(c.Name))) {
				t.Errorf("GET %s on the other instance at once: %d %s", h.Get("Location"), status, got)
			}
			mine, _, _ := listVia(t, client, from, e2eKey)
			if len(mine) == 0 || mine[len(mine)-1].ID != c.ID {
				t.Errorf("the instance that answered 201 does not list id %d at once", c.ID)
			}
			list, _ := waitList(t, client, to, e2eKey, int(c.ID), time.Second)
			if list[c.ID-1].Name != c.Name {
				t.Errorf("the other instance lists %q as id %d, want %q", list[c.ID-1].Name, c.ID, c.Name)
			}
			t.Logf("create %d: listed by the other instance %v after the 201", c.ID, time.Since(created).Round(time.Microsecond))
		}
	})
}

// getVia GETs path on base and returns the status, body and headers.
func getVia(t *testing.T, client *http.Client, base, path, key string) (int, []byte, http.Header) {
	t.Helper()
	req, err := petstoretest.NewAPIRequest(context.Background(), "GET", base+path, key, "")
	if err != nil {
		t.Fatal(err)
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("GET %s%s: %v", base, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b, resp.Header
}

// All members down: creates 503 unavailable with Retry-After, lists and
// known categories still served from the cache, /healthz and /readyz 503; members back:
// creates work again, without restarting petstore.
func TestEtcdQuorumLoss(t *testing.T) {
	t.Parallel()
	cluster := etcdtest.StartCluster(t)
	svc := startRun(t, baseEnv(cluster.Data("quorum")))
	base := svc.url("")
	client := loadClient(t)
	for i := range 3 {
		if status, _, _, err := createVia(client, base, e2eKey, fmt.Sprintf("before-%d", i)); err != nil || status != http.StatusCreated {
			t.Fatalf("create before the outage: %d %v", status, err)
		}
	}
	_, etagBefore, _ := listVia(t, client, base, e2eKey)

	for _, m := range cluster.Members() {
		m.Kill()
	}
	status, _, h, err := createVia(client, base, e2eKey, "during")
	if err != nil || status != http.StatusServiceUnavailable || h.Get("Retry-After") == "" {
		t.Fatalf("create without a cluster: status %d, Retry-After %q, %v; want 503 with Retry-After", status, h.Get("Retry-After"), err)
	}
	list, etag, status := listVia(t, client, base, e2eKey)
	if status != http.StatusOK || len(list) != 3 || etag != etagBefore {
		t.Errorf("list without a cluster: status %d, %d categories, ETag %s; want 200, 3, %s", status, len(list), etag, etagBefore)
	}
	if status, body, _ := getVia(t, client, base, "/v1/categories/2", e2eKey); status != http.StatusOK {
		t.Errorf("GET a cached category without a cluster: %d %s", status, body)
	}
	if status, body, h := getVia(t, client, base, "/v1/categories/4", e2eKey); status != http.StatusServiceUnavailable || h.Get("Retry-After") == "" {
		t.Errorf("GET an id beyond the cache without a cluster: %d %s; want 503 (it cannot be known)", status, body)
	}
	for _, path := range []string{"/healthz", "/readyz"} {
		deadline := time.Now().Add(10 * time.Second)
		for {
			status, body, h := getVia(t, client, base, path, "")
			if status == http.StatusServiceUnavailable && bytes.Contains(body, []byte(`"unavailable"`)) && h.Get("Retry-After") != "" {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s without a cluster: %d %s, want 503 unavailable", path, status, body)
			}
			time.Sleep(20 * time.Millisecond) // polling a condition, bounded
		}
	}
	// The liveness probe stays 200 meanwhile, and reads go on: a probe
	// that restarts the process must not restart it for etcd's outage.
	if status, body, _ := getVia(t, client, base, "/livez", ""); status != http.StatusOK || string(body) != `{"status":"ok"}` {
		t.Errorf("/livez without a cluster: %d %s, want 200 {\"status\":\"ok\"}", status, body)
	}
	if list, _, status := listVia(t, client, base, e2eKey); status != http.StatusOK || len(list) != 3 {
		t.Errorf("list without a cluster, once /readyz says 503: status %d, %d categories; want 200, 3", status, len(list))
	}

	for _, m := range cluster.Members() {
		m.Start(t)
	}
	cluster.WaitHealthy(t, 30*time.Second)
	deadline := time.Now().Add(20 * time.Second)
	for i := 0; ; i++ {
		status, c, _, err := createVia(client, base, e2eKey, fmt.Sprintf("after-%d", i))
		if err == nil && status == http.StatusCreated {
			if c.ID != 4 {
				t.Errorf("first create after the outage: id %d, want 4", c.ID)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("creates still fail 20 s after the cluster came back: %d %v", status, err)
		}
		time.Sleep(50 * time.Millisecond) // polling a condition, bounded
	}
	for _, path := range []string{"/healthz", "/readyz", "/livez"} {
		if status, body, _ := getVia(t, client, base, path, ""); status != http.StatusOK {
			t.Errorf("%s after the outage: %d %s", path, status, body)
		}
	}
}

// kill -9 of the etcd leader while 64 clients create through two
// instances: every 201 is in the final list, ids are consecutive, no name
// twice, and writes resume within seconds. Then kill -9 of one petstore:
// the other keeps serving, and a restarted one catches up.
func TestEtcdLeaderKill(t *testing.T) {
	t.Parallel()
	cluster := etcdtest.StartCluster(t)
	env := map[string]string{"PETSTORE_DATA": cluster.Data("kill")}
	a, b := petstoretest.Start(t, env), petstoretest.Start(t, env)
	bases := []string{a.URL(""), b.URL("")}
	client := loadClient(t)

	type created struct {
		c      petstoretest.Category
		sentAt time.Time
	}
	var (
		mu          sync.Mutex
		oks         []created
		unavailable int
		stop        = make(chan struct{})
		wg          sync.WaitGroup
	)
	for g := range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 2000; i++ {
				select {
				case <-stop:
					return
				default:
				}
				sent := time.Now()
				status, c, _, err := createVia(client, bases[g%2], petstoretest.Key, fmt.Sprintf("k-%d-%d", g, i))
				mu.Lock()
				switch {
				case err != nil:
					t.Errorf("create: %v", err)
				case status == http.StatusCreated:
					oks = append(oks, created{c, sent})
				case status == http.StatusServiceUnavailable:
					unavailable++
				default:
					t.Errorf("create: status %d, want 201 or 503", status)
				}
				mu.Unlock()
				if status == http.StatusServiceUnavailable {
					time.Sleep(50 * time.Millisecond) // a client honouring Retry-After, shortened
				}
			}
		}()
	}
	count := func(after time.Time) int {
		mu.Lock()
		defer mu.Unlock()
		n := 0
		for _, o := range oks {
			if o.sentAt.After(after) {
				n++
			}
		}
		return n
	}
	waitFor := func(what string, within time.Duration, ok func() bool) time.Duration {
		start := time.Now()
		for !ok() {
			if time.Since(start) > within {
				close(stop)
				wg.Wait()
				t.Fatalf("%s: not within %v", what, within)
			}
			time.Sleep(5 * time.Millisecond) // polling a condition, bounded
		}
		return time.Since(start)
	}
	waitFor("100 creates before the kill", 20*time.Second, func() bool { return count(time.Time{}) >= 100 })
	leader := cluster.Leader(t)
	killedAt := time.Now()
	leader.Kill()
	resumed := waitFor("a create sent after the kill answered 201", 15*time.Second, func() bool { return count(killedAt) > 0 })
	waitFor("100 creates after the kill", 20*time.Second, func() bool { return count(killedAt) >= 100 })
	close(stop)
	wg.Wait()
	t.Logf("leader %s killed: first 201 for a create sent after it came %v later; %d creates answered 201, %d answered 503",
		leader.Name(), resumed.Round(time.Millisecond), len(oks), unavailable)
	if resumed > 10*time.Second {
		t.Errorf("writes resumed %v after the leader was killed, want within 10 s", resumed)
	}

	maxID := int64(0)
	for _, o := range oks {
		maxID = max(maxID, o.c.ID)
	}
	list, _ := waitList(t, client, bases[0], petstoretest.Key, int(maxID), 5*time.Second)
	checkConsecutive(t, list)
	for _, o := range oks {
		if got := list[o.c.ID-1]; got.Name != o.c.Name {
			t.Fatalf("201 for %q as id %d, but the list has %q there", o.c.Name, o.c.ID, got.Name)
		}
	}

	a.Cmd.Process.Kill()
	a.Wait(t, 10*time.Second)
	status, c, _, err := createVia(client, bases[1], petstoretest.Key, "after-petstore-kill")
	if err != nil || status != http.StatusCreated {
		t.Fatalf("create on the surviving petstore: %d %v", status, err)
	}
	restarted := petstoretest.Start(t, env)
	listR, etagR := waitList(t, client, restarted.URL(""), petstoretest.Key, int(c.ID), 5*time.Second)
	listB, etagB := waitList(t, client, bases[1], petstoretest.Key, int(c.ID), time.Second)
	if len(listR) != len(listB) || etagR != etagB {
		t.Errorf("restarted petstore lists %d (ETag %s), the survivor %d (ETag %s)", len(listR), etagR, len(listB), etagB)
	}
}

// -import copies a journal into an empty prefix, keeping ids, and refuses
// a prefix that holds categories; -export writes any store back in the
// journal format (version 1: an export holds no keys).
func TestEtcdImportExport(t *testing.T) {
	t.Parallel()
	cluster := etcdtest.Shared(t)
	journalText := journal.Header(1) + "\n" +
		`{"id":1,"name":"dog","description":"Loyal"}` + "\n" +
		`{"id":2,"name":"Cat"}` + "\n" +
		`{"id":5,"name":"gap before me"}` + "\n"
	for i := 6; i < 100; i++ { // more than one txn's worth
		journalText += fmt.Sprintf(`{"id":%d,"name":"n%d"}`, i, i) + "\n"
	}
	path := filepath.Join(t.TempDir(), "in.jsonl")
	if err := os.WriteFile(path, []byte(journalText), 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"PETSTORE_DATA": cluster.Data("imported"), "PETSTORE_ETCD_START_TIMEOUT": "10s"}

	if _, stderr, err := runCommand(t, env, "-import", path); err != nil {
		t.Fatalf("-import: %v; stderr %s", err, stderr)
	}
	if _, _, err := runCommand(t, env, "-import", path); err == nil || !strings.Contains(err.Error(), "empty prefix") {
		t.Errorf("second -import: got %v, want a refusal of a non-empty prefix", err)
	}
	out, stderr, err := runCommand(t, env, "-export")
	if err != nil || out != journalText {
		t.Fatalf("-export from etcd: %v; stderr %s; got\n%.300s\nwant\n%.300s", err, stderr, out, journalText)
	}
	if out, _, err := runCommand(t, map[string]string{"PETSTORE_DATA": path}, "-export"); err != nil || out != journalText {
		t.Errorf("-export from the journal: %v; got\n%.300s", err, out)
	}
	if _, _, err := runCommand(t, map[string]string{"PETSTORE_DATA": path}, "-import", path); err == nil || !strings.Contains(err.Error(), "PETSTORE_DATA") {
		t.Errorf("-import into a journal: got %v, want an error naming PETSTORE_DATA", err)
	}

	svc := startRun(t, baseEnv(cluster.Data("imported")))
	client := loadClient(t)
	if status, c, _, err := createVia(client, svc.url(""), e2eKey, "new"); err != nil || status != http.StatusCreated || c.ID != 100 {
		t.Errorf("create after import: %d id %d %v; want 201 with id 100", status, c.ID, err)
	}
	if status, _, _, err := createVia(client, svc.url(""), e2eKey, "DOG"); err != nil || status != http.StatusConflict {
		t.Errorf("create of an imported name: %d %v; want 409", status, err)
	}
}
