package clients

import (
	"os"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"petstore/internal/testkit"
)

// heldConns is how many HTTP/2 connections the memory benchmark holds.
const heldConns = 10_000

// Keyless HTTP/2 connections, each holding a stream behind a zero window
// and an unfinished header block on a second stream, leave petstore under
// 512 MiB resident (docs/security.md, "HTTP/2"). The benchmark reports
// petstore's peak resident memory (VmHWM of /proc/PID/status) and fails
// past the bound.
func BenchmarkHeldHTTP2Connections(b *testing.B) {
	if _, err := os.Stat("/proc/self/status"); err != nil {
		b.Skip("reads /proc/PID/status: Linux only")
	}
	var lim syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim) != nil || lim.Cur < heldConns+64 {
		b.Skipf("needs %d open files in this process (ulimit -n is %d)", heldConns+64, lim.Cur)
	}
	testkit.Exclusive(b, "flood")
	vars, roots := tlsFiles(b, b.TempDir())
	vars["PETSTORE_MAX_CONNS"] = strconv.Itoa(heldConns)
	for range b.N {
		svc := startWith(b, vars)
		var wg sync.WaitGroup
		var mu sync.Mutex
		failed := map[string]int{}
		sem := make(chan struct{}, 64) // handshakes at once
		for range heldConns {
			sem <- struct{}{}
			wg.Add(1)
			go func() {
				defer wg.Done()
				conn, err := dialH2(svc.Addr, roots)
				<-sem
				if err != nil {
					mu.Lock()
					failed[lastWords(err.Error())]++
					mu.Unlock()
					return
				}
				defer conn.Close()
				conn.SetDeadline(time.Now().Add(2 * time.Minute))
				holdStreams(conn)
			}()
		}
		for len(sem) > 0 {
			time.Sleep(10 * time.Millisecond)
		}
		time.Sleep(3 * time.Second) // every stream blocked behind its window
		peak, rss := svc.Memory(b)
		b.ReportMetric(float64(peak)/(1<<20), "MiB-peak")
		b.ReportMetric(float64(rss)/(1<<20), "MiB-rss")
		b.Logf("%d connections held (%v failed to connect): petstore at %d MiB resident, %d MiB at its peak", heldConns, failed, rss>>20, peak>>20)
		if peak > 512<<20 {
			b.Errorf("peak resident memory %d MiB, want under 512 MiB", peak>>20)
		}
	}
}
