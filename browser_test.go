package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image/png"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A real browser for tests: Debian's headless Chromium, run against
// servers the test started on 127.0.0.1. Without chromium on PATH the tests
// that need it skip loudly, unless PETSTORE_TEST_REQUIRE_CHROMIUM=1 (set by
// .ci/run), which makes them fail.

// needChromium returns the chromium binary, or skips (fails when
// PETSTORE_TEST_REQUIRE_CHROMIUM=1) when there is none.
func needChromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser"} {
		if bin, err := exec.LookPath(name); err == nil {
			return bin
		}
	}
	if os.Getenv("PETSTORE_TEST_REQUIRE_CHROMIUM") == "1" {
		t.Fatalf("PETSTORE_TEST_REQUIRE_CHROMIUM=1 but neither chromium nor chromium-browser is on PATH (apt-get install chromium)")
	}
	t.Skip("SKIPPED LOUDLY: chromium is not installed (apt-get install chromium, or run .ci/run, which installs it and sets PETSTORE_TEST_REQUIRE_CHROMIUM=1); pages were NOT checked in a real browser")
	return ""
}

// chromiumArgs are the flags of every run: headless, a fresh profile, and
// nothing fetched from anywhere but 127.0.0.1 (every other host name
// resolves to nothing; background services are off).
func chromiumArgs(t *testing.T) []string {
	args := []string{
		"--headless=new", "--disable-gpu", "--user-data-dir=" + t.TempDir(),
		"--no-first-run", "--no-default-browser-check", "--disable-background-networking",
		"--disable-component-update", "--disable-sync", "--disable-extensions", "--disable-default-apps",
		"--no-pings", "--no-proxy-server", "--disable-breakpad", "--disable-domain-reliability",
		"--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
		"--hide-scrollbars", "--mute-audio",
	}
	if os.Geteuid() == 0 {
		args = append(args, "--no-sandbox") // Chromium's sandbox refuses to run as root
	}
	return args
}

// runChromium runs chromium with args and url, within a minute, and returns
// what it wrote on stdout. Its whole process group is ended if it overruns.
func runChromium(t *testing.T, bin, url string, args ...string) []byte {
	t.Helper()
	if !strings.HasPrefix(url, "http://127.0.0.1:") {
		t.Fatalf("chromium runs only against servers the test started on 127.0.0.1, not %q", url)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, append(append(chromiumArgs(t), args...), url)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second // helpers that keep the pipes open
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if ctx.Err() != nil {
		err = errors.Join(err, fmt.Errorf("did not finish within a minute"))
	}
	if err != nil {
		t.Fatalf("chromium %s: %v\nstderr (its end):\n%s", url, err, tail(stderr.String(), 2000))
	}
	return stdout.Bytes()
}

// chromiumDumpDOM loads url and returns the DOM once the page has settled,
// scripts included, within budget of the page's virtual time.
func chromiumDumpDOM(t *testing.T, bin, url string, budget time.Duration) string {
	t.Helper()
	return string(runChromium(t, bin, url, "--dump-dom", "--virtual-time-budget="+strconv.FormatInt(budget.Milliseconds(), 10)))
}

// chromiumScreenshot loads url in a w×h window and saves a PNG of it at
// path; it fails unless the file is a PNG of that size.
func chromiumScreenshot(t *testing.T, bin, url, path string, w, h int) {
	t.Helper()
	runChromium(t, bin, url, "--screenshot="+path, fmt.Sprintf("--window-size=%d,%d", w, h))
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	defer f.Close()
	cfg, err := png.DecodeConfig(f)
	if err != nil {
		t.Fatalf("screenshot %s is not a PNG: %v", path, err)
	}
	if cfg.Width != w || cfg.Height != h {
		t.Fatalf("screenshot: got %dx%d, want %dx%d", cfg.Width, cfg.Height, w, h)
	}
}
