package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"
)

// clientTimeout bounds one request; petstore's own create deadline is 10 s.
const clientTimeout = 15 * time.Second

// workload is the clients of a scenario: goroutines that create, list and
// get on random instances until told to stop, recording every operation.
type workload struct {
	urls       []string // base URL of each instance
	key        string
	http       *http.Client
	rec        *recorder
	clock      clock
	readMostly []int    // instances that get 1 in 20 of the creates meant for them
	readOnly   []int    // instances that get no creates
	pool       []string // names shared by all clients, to provoke 409s
}

func newWorkload(urls []string, key string, rec *recorder, c clock, readMostly, readOnly []int) *workload {
	tr := &http.Transport{MaxIdleConnsPerHost: 32, IdleConnTimeout: 30 * time.Second, DisableCompression: true}
	return &workload{urls: urls, key: key, rec: rec, clock: c, readMostly: readMostly, readOnly: readOnly,
		http: &http.Client{Transport: tr, Timeout: clientTimeout},
		pool: []string{"pool-a", "pool-b", "pool-c", "pool-d", "pool-e", "pool-f"}}
}

// start runs n clients. The returned stop lets each finish the operation
// it is in (bounded by the client timeout), then cancels what is left.
func (w *workload) start(abort context.Context, n int, seed uint64) (stop func()) {
	ctx, cancel := context.WithCancel(abort)
	halt := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wk := &worker{w: w, id: i, rng: rand.New(rand.NewPCG(seed, uint64(i)))}
		wg.Add(1)
		go func() {
			defer wg.Done()
			wk.loop(ctx, halt)
		}()
	}
	return func() {
		close(halt)
		done := make(chan struct{})
		go func() { wg.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(clientTimeout + 5*time.Second):
		}
		cancel()
		<-done
		w.http.CloseIdleConnections()
	}
}

// worker is one client.
type worker struct {
	w    *workload
	id   int
	rng  *rand.Rand
	seq  int
	mine []category // what it created (201)
}

func stopping(halt <-chan struct{}) bool {
	select {
	case <-halt:
		return true
	default:
		return false
	}
}

func (wk *worker) loop(ctx context.Context, halt <-chan struct{}) {
	for !stopping(halt) && ctx.Err() == nil {
		switch r := wk.rng.IntN(100); {
		case r < 45:
			wk.create(ctx, halt)
		case r < 80 || len(wk.mine) == 0:
			wk.list(ctx, wk.pick(false))
		default:
			wk.get(ctx)
		}
		sleepCtx(ctx, time.Duration(wk.rng.IntN(10))*time.Millisecond)
	}
}

// pick chooses an instance. A create meant for a read-only one, or (19
// times in 20) for a read-mostly one, goes to one of the others.
func (wk *worker) pick(forCreate bool) int {
	w := wk.w
	i := wk.rng.IntN(len(w.urls))
	if !forCreate || !slices.Contains(w.readOnly, i) && (!slices.Contains(w.readMostly, i) || wk.rng.IntN(20) == 0) {
		return i
	}
	var others []int
	for k := range w.urls {
		if !slices.Contains(w.readMostly, k) && !slices.Contains(w.readOnly, k) {
			others = append(others, k)
		}
	}
	if len(others) == 0 {
		return i
	}
	return others[wk.rng.IntN(len(others))]
}

// create makes one logical create: a fresh name (or, one time in ten, a
// name of the shared pool in a random case), with an Idempotency-Key half
// of the time. A keyed create whose outcome is unknown is retried with the
// same key and body, three times at most.
func (wk *worker) create(ctx context.Context, halt <-chan struct{}) {
	wk.seq++
	id := fmt.Sprintf("c%d-%05d", wk.id, wk.seq)
	name := id
	if wk.rng.IntN(10) == 0 {
		name = randomCase(wk.rng, wk.w.pool[wk.rng.IntN(len(wk.w.pool))])
	}
	key := ""
	if wk.rng.IntN(2) == 0 {
		key = "k-" + id
	}
	for attempt := 1; attempt <= 4; attempt++ {
		op := wk.createOnce(ctx, wk.pick(true), id, name, key, attempt)
		if op.Outcome == outcomeCreated {
			wk.mine = append(wk.mine, category{ID: op.ID, Name: name})
			return
		}
		retry := key != "" && (op.Outcome == outcomeUnknown || op.Code == "idempotency_key_in_use")
		if !retry || stopping(halt) {
			return
		}
		sleepCtx(ctx, time.Duration(200+wk.rng.IntN(300))*time.Millisecond)
	}
}

func randomCase(rng *rand.Rand, s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'a' && c <= 'z' && rng.IntN(2) == 0 {
			b[i] = c - 'a' + 'A'
		}
	}
	return string(b)
}

// createOnce sends one create attempt and records it.
func (wk *worker) createOnce(ctx context.Context, inst int, create, name, key string, attempt int) Op {
	body, _ := json.Marshal(map[string]string{"name": name})
	op := Op{Client: wk.id, Instance: inst, Kind: opCreate, Create: create, Name: name, Key: key, Attempt: attempt}
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, wk.w.urls[inst]+"/v1/categories", bytes.NewReader(body))
	// Without GetBody net/http never sends the create again by itself
	// (it would, on a reused connection, for a request with an
	// Idempotency-Key): every attempt the server sees is in the history.
	req.GetBody = nil
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	status, hdr, answer, err := wk.do(req, &op)
	switch {
	case err != nil:
		op.Err, op.Outcome = shortError(err), outcomeUnknown
	case status == http.StatusCreated:
		var c category
		if jerr := json.Unmarshal(answer, &c); jerr != nil || c.ID <= 0 {
			op.Err, op.Outcome = "201 with a body that is not a category", outcomeUnknown
			break
		}
		op.ID, op.GotName, op.Outcome = c.ID, c.Name, outcomeCreated
		op.Replayed = strings.EqualFold(hdr.Get("Idempotent-Replayed"), "true")
	default:
		op.Code, op.Message = errorBody(answer)
		op.Outcome = classify(status, op.Code)
	}
	wk.w.rec.add(op, nil)
	return op
}

// classify tells what an answer other than a transport error says of a
// create: 201 created it; 503 outcome_unknown may or may not have; any
// other answer (4xx, 500, 503 unavailable) is a definite failure.
func classify(status int, code string) string {
	switch {
	case status == http.StatusCreated:
		return outcomeCreated
	case code == "outcome_unknown":
		return outcomeUnknown
	default:
		return outcomeDefinite
	}
}

// do sends req with the key, times it into op and reads the whole answer.
// An answer whose body could not be read counts as a transport error.
func (wk *worker) do(req *http.Request, op *Op) (int, http.Header, []byte, error) {
	req.Header.Set("Authorization", "Bearer "+wk.w.key)
	op.Start = wk.w.clock.now()
	resp, err := wk.w.http.Do(req)
	if err != nil {
		op.End = wk.w.clock.now()
		return 0, nil, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 256<<20))
	op.End = wk.w.clock.now()
	op.Status = resp.StatusCode
	if err != nil {
		return resp.StatusCode, resp.Header, nil, fmt.Errorf("reading the answer: %w", err)
	}
	return resp.StatusCode, resp.Header, b, nil
}

// errorBody returns the code and (shortened) message of an Error body.
func errorBody(b []byte) (code, message string) {
	var e struct{ Code, Message string }
	if json.Unmarshal(b, &e) != nil {
		return "", truncate(string(b), 120)
	}
	return e.Code, truncate(e.Message, 200)
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// shortError keeps the part of a transport error that says what happened.
func shortError(err error) string {
	var te interface{ Timeout() bool }
	if errors.As(err, &te) && te.Timeout() {
		return "timeout: " + truncate(err.Error(), 160)
	}
	return truncate(err.Error(), 200)
}

func (wk *worker) list(ctx context.Context, inst int) {
	op := Op{Client: wk.id, Instance: inst, Kind: opList}
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, wk.w.urls[inst]+"/v1/categories", nil)
	status, _, answer, err := wk.do(req, &op)
	var cats []category
	switch {
	case err != nil:
		op.Err = shortError(err)
	case status != http.StatusOK:
		op.Code, op.Message = errorBody(answer)
	default:
		if jerr := json.Unmarshal(answer, &cats); jerr != nil {
			op.Err, cats = "list is not a JSON array of categories: "+truncate(jerr.Error(), 100), nil
		}
	}
	wk.w.rec.add(op, cats)
}

// get reads back one of the categories this client created, on any
// instance.
func (wk *worker) get(ctx context.Context) {
	c := wk.mine[wk.rng.IntN(len(wk.mine))]
	inst := wk.pick(false)
	op := Op{Client: wk.id, Instance: inst, Kind: opGet, ID: c.ID, Name: c.Name}
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("%s/v1/categories/%d", wk.w.urls[inst], c.ID), nil)
	status, _, answer, err := wk.do(req, &op)
	switch {
	case err != nil:
		op.Err = shortError(err)
	case status == http.StatusOK:
		var got category
		if json.Unmarshal(answer, &got) == nil {
			op.GotName = got.Name
		}
	default:
		op.Code, op.Message = errorBody(answer)
	}
	wk.w.rec.add(op, nil)
}
