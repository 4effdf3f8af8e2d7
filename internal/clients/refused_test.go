package clients

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"

	"strings"
	"sync"
	"testing"
	"time"
)

// Answers given before the request's body is read (401, 403, 413 by
// declared size, 415) reach clients that send their whole body before they
// read, with keep-alive and with Connection: close: petstore drains what
// they still send after the answer instead of resetting the connection
// (docs/security.md, "Connections"). Each client sends each case repeats
// times and must read the Error body every time: a reset that comes one
// time in a few shows, and the megabytes sent stay affordable (each case
// up to 1.1 MiB, some 40 MB per client and mode at 8).

const repeats = 8

// refusal is one request petstore refuses before reading its body, as the
// client scripts read it (testdata/refused.py, testdata/refused.mjs).
type refusal struct {
	Name        string `json:"name"`
	URL         string `json:"url"`
	Auth        string `json:"auth,omitempty"` // the Authorization header; "" for none
	ContentType string `json:"content_type"`
	Size        int    `json:"size"` // of the body, bytes
	Status      int    `json:"status"`
	Code        string `json:"code"`
}

// refusals returns the cases: bodies of 64 KiB, 200 KB and 1.1 MiB, refused
// for no key (401), a key without the scope (403), the media type (415),
// and, the largest, its declared size (413).
func refusals(base string) []refusal {
	var out []refusal
	for _, size := range []int{64 << 10, 200_000, 1_100_000 * 1024 / 1000} {
		for _, c := range []refusal{
			{Name: "401", Status: 401, Code: "unauthorized", ContentType: "application/json"},
			{Name: "403", Auth: "Bearer " + readKey, Status: 403, Code: "insufficient_scope", ContentType: "application/json"},
			{Name: "415", Auth: "Bearer " + writeKey, Status: 415, Code: "unsupported_media_type", ContentType: "text/plain"},
			{Name: "413", Auth: "Bearer " + writeKey, Status: 413, Code: "payload_too_large", ContentType: "application/json"},
		} {
			if c.Status == 413 && size <= 1<<20 {
				continue // within the bound: read, not refused
			}
			c.Name = fmt.Sprintf("%s %d bytes", c.Name, size)
			c.URL, c.Size = base+"/v1/categories", size
			out = append(out, c)
		}
	}
	return out
}

// body returns a JSON body of size bytes, as the scripts make it.
func body(size int) []byte {
	return append(append([]byte(`{"name":"`), bytes.Repeat([]byte("x"), size-11)...), `"}`...)
}

// tally is what one client got for one case: how many times the Error body
// of the expected code, and what it got otherwise.
type tally struct {
	OK     int            `json:"ok"`
	Errors map[string]int `json:"errors"`
}

// check fails t for every case of results where a client did not read the
// expected answer every time.
func check(t *testing.T, client string, cases []refusal, results map[string]tally, n int) {
	t.Helper()
	for _, c := range cases {
		if got := results[c.Name]; got.OK != n {
			t.Errorf("%s, %s: the Error body %d times of %d; otherwise %v", client, c.Name, got.OK, n, got.Errors)
		}
	}
}

// isError reports whether an answer is the Error body of c.
func isError(c refusal, status int, got []byte) bool {
	var e struct {
		Code   string `json:"code"`
		Status int    `json:"status"`
	}
	return status == c.Status && json.Unmarshal(got, &e) == nil && e.Code == c.Code && e.Status == c.Status
}

func TestRefusedBodiesReachGo(t *testing.T) {
	t.Parallel()
	svc := start(t)
	cases := refusals(svc.URL(""))
	for _, keepAlive := range []bool{true, false} {
		client := &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{DisableKeepAlives: !keepAlive}}
		check(t, fmt.Sprintf("Go (keep-alive %v)", keepAlive), cases, goTallies(client, cases, repeats), repeats)
	}
}

// goTallies runs goTally for every case at once, each on connections of
// its own, and returns the tallies by case name.
func goTallies(client *http.Client, cases []refusal, n int) map[string]tally {
	var (
		mu      sync.Mutex
		wg      sync.WaitGroup
		results = map[string]tally{}
	)
	for _, c := range cases {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got := goTally(client, c, n)
			mu.Lock()
			results[c.Name] = got
			mu.Unlock()
		}()
	}
	wg.Wait()
	return results
}

// goTally sends c n times with client.
func goTally(client *http.Client, c refusal, n int) tally {
	out := tally{Errors: map[string]int{}}
	payload := body(c.Size)
	for range n {
		req, _ := http.NewRequest("POST", c.URL, bytes.NewReader(payload))
		req.Header.Set("Content-Type", c.ContentType)
		if c.Auth != "" {
			req.Header.Set("Authorization", c.Auth)
		}
		resp, err := client.Do(req)
		if err != nil {
			out.Errors[lastWords(err.Error())]++
			continue
		}
		got, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if isError(c, resp.StatusCode, got) {
			out.OK++
		} else {
			out.Errors[fmt.Sprint(resp.StatusCode)]++
		}
	}
	return out
}

// lastWords keeps the end of an error, where its cause is, not its URL.
func lastWords(s string) string {
	if i := strings.LastIndex(s, ": "); i >= 0 && len(s)-i < 80 {
		return s[i+2:]
	}
	return s[max(0, len(s)-80):]
}

func TestRefusedBodiesReachCurl(t *testing.T) {
	t.Parallel()
	curl := need(t, "curl", "apt-get install curl")
	svc := start(t)
	cases := refusals(svc.URL(""))
	dir := t.TempDir()
	for _, closeConn := range []bool{false, true} {
		results := map[string]tally{}
		for _, c := range cases {
			results[c.Name] = curlTally(t, curl, dir, c, closeConn)
		}
		check(t, fmt.Sprintf("curl (Connection: close %v)", closeConn), cases, results, repeats)
	}
}

// curlTally sends c repeats times with one curl, which keeps its
// connection between them unless closeConn.
func curlTally(t *testing.T, curl, dir string, c refusal, closeConn bool) tally {
	t.Helper()
	bodyFile := filepath.Join(dir, fmt.Sprintf("body-%d", c.Size))
	if err := os.WriteFile(bodyFile, body(c.Size), 0o600); err != nil {
		t.Fatal(err)
	}
	// One request a block of the config (-K), each writing its status
	// and body to a file of its own.
	var config strings.Builder
	for i := range repeats {
		if i > 0 {
			config.WriteString("next\n")
		}
		fmt.Fprintf(&config, "url = %q\nrequest = \"POST\"\ndata-binary = \"@%s\"\nheader = \"Content-Type: %s\"\n", c.URL, bodyFile, c.ContentType)
		fmt.Fprintf(&config, "header = \"Expect:\"\noutput = %q\nwrite-out = \"%%{http_code}\\n\"\nsilent\nmax-time = 20\n", filepath.Join(dir, fmt.Sprint("out-", i)))
		if c.Auth != "" {
			fmt.Fprintf(&config, "header = %q\n", "Authorization: "+c.Auth)
		}
		if closeConn {
			config.WriteString("header = \"Connection: close\"\n")
		}
	}
	cmd := exec.Command(curl, "-K", "-")
	cmd.Stdin = strings.NewReader(config.String())
	codes, _ := cmd.Output() // a request that fails shows as 000
	out := tally{Errors: map[string]int{}}
	for i, code := range strings.Fields(string(codes)) {
		got, _ := os.ReadFile(filepath.Join(dir, fmt.Sprint("out-", i)))
		os.Remove(filepath.Join(dir, fmt.Sprint("out-", i)))
		var status int
		fmt.Sscan(code, &status)
		if isError(c, status, got) {
			out.OK++
		} else {
			out.Errors[code]++
		}
	}
	return out
}

func TestRefusedBodiesReachPython(t *testing.T) {
	t.Parallel()
	python := need(t, "python3", "apt-get install python3")
	svc := start(t)
	cases := refusals(svc.URL(""))
	for _, client := range []string{"http.client", "http.client close", "urllib"} {
		check(t, "Python "+client, cases, runScript(t, cases, python, "testdata/refused.py", client), repeats)
	}
}

func TestRefusedBodiesReachNode(t *testing.T) {
	t.Parallel()
	node := need(t, "node", "apt-get install nodejs")
	svc := start(t)
	cases := refusals(svc.URL(""))
	for _, client := range []string{"http", "http close", "fetch"} {
		check(t, "Node "+client, cases, runScript(t, cases, node, "testdata/refused.mjs", client), repeats)
	}
}

// runScript runs a client script with the cases on its standard input and
// returns its tallies, which it writes as JSON on its standard output.
func runScript(t *testing.T, cases []refusal, interpreter, script, client string) map[string]tally {
	t.Helper()
	in, _ := json.Marshal(map[string]any{"cases": cases, "repeats": repeats, "client": client})
	cmd := exec.Command(interpreter, script)
	cmd.Stdin = bytes.NewReader(in)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s %s (%s): %v\n%s", interpreter, script, client, err, stderr.String())
	}
	var results map[string]tally
	if err := json.Unmarshal(out, &results); err != nil {
		t.Fatalf("%s %s (%s) wrote %q: %v", interpreter, script, client, out, err)
	}
	return results
}
