package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"petstore/internal/apikey"
	"petstore/internal/catalog"
	"petstore/internal/store"
)

// BenchmarkCreate measures POST /v1/categories through the whole handler
// (auth, decoding, validation, access log, store) with 1, 8 and 64
// concurrent clients, durable (write + fsync per batch) and in memory, and
// with an Idempotency-Key on every create or none. Group commit shows as
// durable creates/s growing with the clients:
//
//	go test -run '^$' -bench 'BenchmarkCreate$' -benchtime 2s -count 6 . | tee create.txt
//	benchstat -col /clients create.txt
//	benchstat -col /keys create.txt    # the cost of Idempotency-Keys
func BenchmarkCreate(b *testing.B) {
	for _, mode := range []string{"durable", "memory"} {
		for _, clients := range []int{1, 8, 64} {
			for _, keys := range []bool{false, true} {
				benchmarkCreate(b, mode, clients, keys)
			}
		}
	}
}

// benchmarkCreate is one sub-benchmark of BenchmarkCreate.
func benchmarkCreate(b *testing.B, mode string, clients int, keys bool) {
	b.Run(fmt.Sprintf("store=%s/keys=%v/clients=%d", mode, keys, clients), func(b *testing.B) {
		path := store.MemoryPath
		if mode == "durable" {
			path = filepath.Join(b.TempDir(), "bench.jsonl")
		}
		// How many creates share a batch (one write and fsync) tells why
		// durable creates/s move: fewer per batch means more fsyncs per create.
		// And how long a batch's write and fsync takes tells what its bytes
		// cost (see bench/diskwrites.sh for the disk's side).
		var batches, batched, commits, committing atomic.Int64
		s, err := openStore(path, store.EtcdConfig{}, store.Options{
			OnBatch:  func(n int) { batches.Add(1); batched.Add(int64(n)) },
			OnCommit: func(_ int, took time.Duration) { commits.Add(1); committing.Add(int64(took)) },
		})
		if err != nil {
			b.Fatal(err)
		}
		defer s.Close()
		env := newTestEnv(b, withStore(s), withLogTo(io.Discard))
		runClients(b, clients, func(i int64) {
			r := httptest.NewRequest("POST", "/v1/categories", strings.NewReader(`{"name":"category `+strconv.FormatInt(i, 10)+`"}`))
			r.Header.Set("Authorization", "Bearer "+testKey)
			r.Header.Set("Content-Type", "application/json")
			if keys {
				r.Header.Set("Idempotency-Key", `"8e03978e-40d5-43e8-bc93-`+strconv.FormatInt(1e11+i, 10)+`"`)
			}
			rec := httptest.NewRecorder()
			env.handler.ServeHTTP(rec, r)
			if rec.Code != http.StatusCreated {
				b.Errorf("create: got %d: %s", rec.Code, rec.Body)
			}
		})
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "creates/s")
		if n := batches.Load(); mode == "durable" && n > 0 {
			b.ReportMetric(float64(batched.Load())/float64(n), "creates/batch")
		}
		if n := commits.Load(); mode == "durable" && n > 0 {
			b.ReportMetric(float64(committing.Load())/float64(n), "write-ns/batch")
		}
	})
}

// runClients calls op b.N times in all, from clients goroutines at once.
func runClients(b *testing.B, clients int, op func(i int64)) {
	var next atomic.Int64
	var wg sync.WaitGroup
	b.ResetTimer()
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := next.Add(1); i <= int64(b.N); i = next.Add(1) {
				op(i)
			}
		}()
	}
	wg.Wait()
}

// discardWriter is a ResponseWriter that keeps nothing, so that benchmarks
// measure the handler and not a recorder's buffer.
type discardWriter struct {
	header http.Header
	status int
}

func (w *discardWriter) Header() http.Header         { return w.header }
func (w *discardWriter) Write(p []byte) (int, error) { return len(p), nil }
func (w *discardWriter) WriteHeader(status int)      { w.status = status }

// reset readies w for the next request, with a fresh header map as
// net/http gives.
func (w *discardWriter) reset() { w.header, w.status = make(http.Header, 8), 0 }

// serveBench sends r through h b.N times, with a fresh header map each
// time as net/http gives, and checks the status of the last answer.
func serveBench(b *testing.B, h http.Handler, r *http.Request, want int) {
	b.Helper()
	w := &discardWriter{}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		w.reset()
		h.ServeHTTP(w, r)
	}
	b.StopTimer()
	if w.status != want {
		b.Fatalf("status: got %d, want %d", w.status, want)
	}
}

// benchEnv is a handler over a memory store holding n categories with names
// of about 20 characters, logging to io.Discard.
func benchEnv(b *testing.B, n int, opts ...testOption) *testEnv {
	b.Helper()
	env := newTestEnv(b, append(opts, withLogTo(io.Discard))...)
	for i := range n {
		if _, err := env.store.Create(context.Background(), catalog.NewCategory{Name: benchName(i + 1)}); err != nil {
			b.Fatal(err)
		}
	}
	return env
}

// benchName is a category name of 20 characters.
func benchName(i int) string { return fmt.Sprintf("category-%011d", i) }

// BenchmarkList measures GET /v1/categories through the whole handler. Its
// allocs/op must not grow with the number of categories: the list is served
// from bytes encoded at create time.
//
//	go test -run '^$' -bench 'BenchmarkList$' -benchmem .
func BenchmarkList(b *testing.B) {
	for _, n := range []int{10, 100, 10_000, 100_000} {
		b.Run(fmt.Sprintf("categories=%d", n), func(b *testing.B) {
			env := benchEnv(b, n)
			r := httptest.NewRequest("GET", "/v1/categories", nil)
			r.Header.Set("Authorization", "Bearer "+testKey)
			b.SetBytes(int64(snapshotOf(b, env.store).Size()))
			serveBench(b, env.handler, r, http.StatusOK)
		})
	}
}

// BenchmarkListCORS measures GET /v1/categories of 100 from a page of an
// allowed origin, against BenchmarkList/categories=100: the cost of CORS.
func BenchmarkListCORS(b *testing.B) {
	env := benchEnv(b, 100, withCORS(b, testOrigin))
	r := httptest.NewRequest("GET", "/v1/categories", nil)
	r.Header.Set("Authorization", "Bearer "+testKey)
	r.Header.Set("Origin", testOrigin)
	serveBench(b, env.handler, r, http.StatusOK)
}

// BenchmarkListNotModified measures a revalidation that answers 304.
func BenchmarkListNotModified(b *testing.B) {
	env := benchEnv(b, 100)
	r := httptest.NewRequest("GET", "/v1/categories", nil)
	r.Header.Set("Authorization", "Bearer "+testKey)
	r.Header.Set("If-None-Match", snapshotOf(b, env.store).ETag())
	serveBench(b, env.handler, r, http.StatusNotModified)
}

// BenchmarkGetCategory measures GET /v1/categories/{id}.
func BenchmarkGetCategory(b *testing.B) {
	env := benchEnv(b, 10_000)
	r := httptest.NewRequest("GET", "/v1/categories/5000", nil)
	r.Header.Set("Authorization", "Bearer "+testKey)
	serveBench(b, env.handler, r, http.StatusOK)
}

// BenchmarkAuth measures the bearer check alone, with 1 and 4 accepted keys
// (every key is compared, in constant time).
func BenchmarkAuth(b *testing.B) {
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) })
	for _, keys := range []int{1, 4} {
		accepted := []string{testKey}
		for i := 1; i < keys; i++ {
			accepted = append(accepted, fmt.Sprintf("another-key-%d", i))
		}
		h := requireKey(apikey.NewRing(apikey.AllScopes(accepted...)), nil, apikey.Read, ok)
		for _, tc := range []struct {
			name, header string
			want         int
		}{
			{"accepted", "Bearer " + testKey, http.StatusNoContent},
			{"refused", "Bearer not-the-key", http.StatusUnauthorized},
			{"missing", "", http.StatusUnauthorized},
		} {
			b.Run(fmt.Sprintf("keys=%d/%s", keys, tc.name), func(b *testing.B) {
				r := httptest.NewRequest("GET", "/v1/categories", nil)
				if tc.header != "" {
					r.Header.Set("Authorization", tc.header)
				}
				serveBench(b, h, r, tc.want)
			})
		}
	}
}

// The list answer costs the same allocations at any size: its bytes are
// encoded at create time (issue: allocs/op independent of size). Counted,
// not timed, so it is a test.
func TestListAllocationsIndependentOfSize(t *testing.T) {
	allocs, bytes := map[int]float64{}, map[int]uint64{}
	for _, n := range []int{10, 10_000} {
		env := newTestEnv(t, withLogTo(io.Discard))
		for i := range n {
			if _, err := env.store.Create(context.Background(), catalog.NewCategory{Name: benchName(i + 1)}); err != nil {
				t.Fatal(err)
			}
		}
		r := httptest.NewRequest("GET", "/v1/categories", nil)
		r.Header.Set("Authorization", "Bearer "+testKey)
		w := &discardWriter{}
		serve := func() {
			w.reset()
			env.handler.ServeHTTP(w, r)
		}
		allocs[n] = testing.AllocsPerRun(100, serve)
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		for range 100 {
			serve()
		}
		runtime.ReadMemStats(&after)
		bytes[n] = (after.TotalAlloc - before.TotalAlloc) / 100
		if w.status != http.StatusOK {
			t.Fatalf("%d categories: status %d", n, w.status)
		}
	}
	if allocs[10] != allocs[10_000] {
		t.Errorf("allocations per list: %v with 10 categories, %v with 10,000; want the same", allocs[10], allocs[10_000])
	}
	// The 10,000-category list is 430 KB: copying or encoding it would show.
	if bytes[10_000] > bytes[10]+4<<10 {
		t.Errorf("bytes allocated per list: %d with 10 categories, %d with 10,000; want no growth with size", bytes[10], bytes[10_000])
	}
}
