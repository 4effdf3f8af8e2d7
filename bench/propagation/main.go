// Command propagation measures how long a category created on one petstore
// takes to appear in another's list (both on one etcd prefix): for each of
// N sequential creates on A, the time from A's 201 to B's list holding it.
// B's list is polled with If-None-Match, so an unchanged list costs a 304.
//
//	PETSTORE_API_KEYS=key go run ./bench/propagation http://127.0.0.1:A http://127.0.0.1:B [N]
//
// It prints "p50_µs p99_µs max_µs" on stdout.
package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strconv"
	"time"
)

func main() {
	if len(os.Args) < 3 {
		fmt.Fprintln(os.Stderr, "usage: propagation BASE_A BASE_B [N]")
		os.Exit(2)
	}
	a, b, n := os.Args[1], os.Args[2], 200
	if len(os.Args) > 3 {
		n, _ = strconv.Atoi(os.Args[3])
	}
	key := os.Getenv("PETSTORE_API_KEYS")
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{Proxy: nil}}
	etag := ""
	var lags []time.Duration
	run := time.Now().UnixNano()
	for i := range n {
		body := fmt.Sprintf(`{"name":"propagation-%d-%d"}`, run, i)
		req, _ := http.NewRequest("POST", a+"/v1/categories", bytes.NewBufferString(body))
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Content-Type", "application/json")
		resp, err := client.Do(req)
		if err != nil || resp.StatusCode != http.StatusCreated {
			fail("create on A: %v %v", err, resp)
		}
		var c struct{ ID int64 }
		json.NewDecoder(resp.Body).Decode(&c)
		resp.Body.Close()
		created := time.Now()
		for {
			if time.Since(created) > 5*time.Second {
				fail("id %d not listed by B within 5 s", c.ID)
			}
			req, _ := http.NewRequest("GET", b+"/v1/categories", nil)
			req.Header.Set("Authorization", "Bearer "+key)
			if etag != "" {
				req.Header.Set("If-None-Match", etag)
			}
			resp, err := client.Do(req)
			if err != nil {
				fail("list on B: %v", err)
			}
			list, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				etag = resp.Header.Get("Etag")
				if bytes.Contains(list, []byte(`{"id":`+strconv.FormatInt(c.ID, 10)+`,`)) {
					lags = append(lags, time.Since(created))
					break
				}
			}
		}
	}
	slices.Sort(lags)
	pct := func(p float64) int64 { return lags[min(len(lags)-1, int(p*float64(len(lags))))].Microseconds() }
	fmt.Printf("%d %d %d\n", pct(0.50), pct(0.99), lags[len(lags)-1].Microseconds())
}

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "propagation: "+format+"\n", args...)
	os.Exit(1)
}
