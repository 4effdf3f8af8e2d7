// Command bodies measures the memory petstore takes while many clients post
// large bodies at once: it starts the binary given on 127.0.0.1
// with a memory store, opens -conns connections that each POST a body of
// -size bytes (a valid create), all at once, and prints the process's peak
// resident memory (VmHWM in /proc/PID/status) and the answers. Linux only.
//
//	go build -o petstore . && go run ./bench/bodies -bin ./petstore
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"
)

func main() {
	bin := flag.String("bin", "./petstore", "petstore binary")
	conns := flag.Int("conns", 1000, "concurrent connections")
	size := flag.Int("size", 1<<20, "body bytes per connection")
	flag.Parse()
	if err := measure(*bin, *conns, *size); err != nil {
		fmt.Fprintln(os.Stderr, "bodies:", err)
		os.Exit(1)
	}
}

func measure(bin string, conns, size int) error {
	const key = "bench-bodies-key"
	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(), "PETSTORE_ADDR=127.0.0.1:0", "PETSTORE_DATA=:memory:", "PETSTORE_API_KEYS="+key)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	defer cmd.Process.Kill()
	sc := bufio.NewScanner(stderr)
	var addr string
	for addr == "" && sc.Scan() {
		var l struct{ Msg, Addr string }
		if json.Unmarshal(sc.Bytes(), &l) == nil && l.Msg == "listening" {
			addr = l.Addr
		}
	}
	if addr == "" {
		return fmt.Errorf("no listening line")
	}
	go io.Copy(io.Discard, stderr)

	start := make(chan struct{})
	var wg sync.WaitGroup
	var mu sync.Mutex
	statuses := map[string]int{}
	for i := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			status := post(addr, key, i, size, start)
			mu.Lock()
			statuses[status]++
			mu.Unlock()
		}()
	}
	began := time.Now()
	close(start)
	wg.Wait()
	elapsed := time.Since(began)
	hwm, err := peakRSS(cmd.Process.Pid)
	if err != nil {
		return err
	}
	fmt.Printf("%d connections x %d-byte bodies: peak RSS (VmHWM) %s, answers %v, %v\n", conns, size, hwm, statuses, elapsed.Round(time.Millisecond))
	return nil
}

// post sends one create with a body of size bytes, once start is closed,
// and returns its status, or the error.
func post(addr, key string, i, size int, start <-chan struct{}) string {
	conn, err := net.DialTimeout("tcp", addr, 30*time.Second)
	if err != nil {
		return "dial failed"
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(120 * time.Second))
	head := `{"name":"body-` + strconv.Itoa(i) + `"`
	body := head + strings.Repeat(" ", size-len(head)-1) + "}"
	<-start
	_, err = io.WriteString(conn, "POST /v1/categories HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer "+key+
		"\r\nContent-Type: application/json\r\nContent-Length: "+strconv.Itoa(size)+"\r\n\r\n"+body)
	if err != nil {
		return "write failed"
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		return "no answer"
	}
	resp.Body.Close()
	return strconv.Itoa(resp.StatusCode)
}

func peakRSS(pid int) (string, error) {
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return "", err
	}
	for _, line := range strings.Split(string(status), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			return strings.TrimSpace(v), nil
		}
	}
	return "", fmt.Errorf("no VmHWM in /proc/%d/status", pid)
}
