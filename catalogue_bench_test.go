package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"testing"

	"petstore/internal/catalog"
)

// maximalCategory returns the i-th of a family of distinct categories that
// each take the most bytes a valid category can take on a journal line:
// a name of 100 characters and a description of 1000, each character one
// that JSON output escapes to 6 bytes (<, > and & as \u003c, \u003e, \u0026).
func maximalCategory(i int) catalog.NewCategory {
	const six = "<>&"
	var name strings.Builder
	for n, d := i, 0; d < 100; d++ {
		name.WriteByte(six[n%3])
		n /= 3
	}
	return catalog.NewCategory{Name: name.String(), Description: strings.Repeat("<", 1000), HasDescription: true}
}

// BenchmarkCatalogueWorstCase measures what a journal store holding
// maximal categories (see maximalCategory), each made with an
// Idempotency-Key, costs on disk and in resident memory, per category, once
// the store has been reopened (the steady state after a restart, and the
// peak of a start: the replay reads the whole file at once). README,
// "Catalogue size", extrapolates these figures to the default cap:
//
//	go test -run '^$' -bench BenchmarkCatalogueWorstCase -benchtime 1x .
//
// PETSTORE_BENCH_CATEGORIES sets how many categories (default 20000).
func BenchmarkCatalogueWorstCase(b *testing.B) {
	n := 20000
	if v := os.Getenv("PETSTORE_BENCH_CATEGORIES"); v != "" {
		n, _ = strconv.Atoi(v)
	}
	path := filepath.Join(b.TempDir(), "max.jsonl")
	fill := openTestStore(b, path)
	var wg sync.WaitGroup
	scope := scopeOf(testKey)
	for w := range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < n; i += 64 {
				nc := maximalCategory(i)
				nc.Key = catalog.NewIdempotencyKey(scope, fmt.Sprintf("8e03978e-40d5-43e8-bc93-%012d", i))
				if _, err := fill.Create(context.Background(), nc); err != nil {
					b.Errorf("create %d: %v", i, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	fill.Close()
	info, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	lines := strings.Count(readFileB(b, path), "\n") - 1
	runtime.GC()
	debug.FreeOSMemory()
	before := residentBytes(b)
	for range b.N {
		s := openTestStore(b, path)
		peak := residentBytes(b)
		runtime.GC()
		debug.FreeOSMemory()
		held := residentBytes(b)
		if got := snapshotOf(b, s).Len(); got != n {
			b.Fatalf("reopened: %d categories, want %d", got, n)
		}
		b.ReportMetric(float64(info.Size())/float64(lines), "disk-B/category")
		b.ReportMetric(float64(peak-before)/float64(n), "start-rss-B/category")
		b.ReportMetric(float64(held-before)/float64(n), "held-rss-B/category")
		s.Close()
	}
}

func readFileB(b *testing.B, path string) string {
	data, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	return string(data)
}

// residentBytes returns the process's resident memory (VmRSS).
func residentBytes(b *testing.B) int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		b.Skip("no /proc/self/status")
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10
		}
	}
	b.Fatal("no VmRSS in /proc/self/status")
	return 0
}
