package clients

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// prismVersion is the Prism CLI npx runs: a validating proxy, as a gateway
// in front of petstore would be.
const prismVersion = "@stoplight/prism-cli@5.16.0"

// prismRepeats is how many times each case goes through Prism (with and
// without keep-alive), fewer than the direct clients' repeats: Prism spends
// some 90 ms of a CPU on each request, and the resets it would turn into
// 500s are the same ones the direct clients, Node's http among them, try
// repeats times.
const prismRepeats = 1

// Through Prism as a validating proxy (Node's http client forwarding), the
// answers petstore gives before reading a body reach the client as
// petstore gave them, not as a 500 for a reset.
func TestRefusedBodiesThroughPrism(t *testing.T) {
	t.Parallel()
	npx := need(t, "npx", "apt-get install npm")
	svc := start(t)
	spec := filepath.Join(t.TempDir(), "openapi.json")
	resp, err := http.Get(svc.URL("/v1/openapi.json"))
	if err != nil {
		t.Fatal(err)
	}
	doc, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err := os.WriteFile(spec, doc, 0o600); err != nil {
		t.Fatal(err)
	}
	port := freePort(t)
	proxy := fmt.Sprintf("http://127.0.0.1:%d", port)
	var log strings.Builder
	cmd := exec.Command(npx, "--yes", prismVersion, "proxy", spec, svc.URL(""), "--host", "127.0.0.1", "--port", fmt.Sprint(port))
	cmd.Stdout, cmd.Stderr = &log, &log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // npx starts node: stop both
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); cmd.Wait() })
	began := time.Now()
	waitHTTP(t, proxy+"/healthz", 3*time.Minute) // the first run downloads Prism
	t.Logf("Prism answered after %v", time.Since(began).Round(time.Millisecond))
	cases := refusals(proxy)
	for _, keepAlive := range []bool{true, false} {
		client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{DisableKeepAlives: !keepAlive}}
		began := time.Now()
		check(t, fmt.Sprintf("Go through Prism (keep-alive %v)", keepAlive), cases, goTallies(client, cases, prismRepeats), prismRepeats)
		t.Logf("keep-alive %v: %d requests in %v", keepAlive, len(cases)*prismRepeats, time.Since(began).Round(time.Millisecond))
	}
	if t.Failed() {
		t.Logf("Prism's log:\n%s", log.String())
	}
}
