package main

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// BenchmarkCreate measures POST /v1/categories through the whole handler
// (auth, decoding, validation, access log, store) with 1, 8 and 64
// concurrent clients, durable (write + fsync per batch) and in memory.
// Group commit shows as durable creates/s growing with the clients:
//
//	go test -run '^$' -bench 'BenchmarkCreate$' -benchtime 2s -count 6 . | tee create.txt
//	benchstat -col /clients create.txt
func BenchmarkCreate(b *testing.B) {
	for _, mode := range []string{"durable", "memory"} {
		for _, clients := range []int{1, 8, 64} {
			b.Run(fmt.Sprintf("store=%s/clients=%d", mode, clients), func(b *testing.B) {
				path := memoryPath
				if mode == "durable" {
					path = filepath.Join(b.TempDir(), "bench.jsonl")
				}
				store, err := openStore(path, discardLogger())
				if err != nil {
					b.Fatal(err)
				}
				defer store.Close()
				env := newTestEnv(b, withStore(store), withLogTo(io.Discard))
				runClients(b, clients, func(i int64) {
					r := httptest.NewRequest("POST", "/v1/categories", strings.NewReader(`{"name":"category `+strconv.FormatInt(i, 10)+`"}`))
					r.Header.Set("Authorization", "Bearer "+testKey)
					r.Header.Set("Content-Type", "application/json")
					rec := httptest.NewRecorder()
					env.handler.ServeHTTP(rec, r)
					if rec.Code != http.StatusCreated {
						b.Errorf("create: got %d: %s", rec.Code, rec.Body)
					}
				})
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "creates/s")
			})
		}
	}
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
