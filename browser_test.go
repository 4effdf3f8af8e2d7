package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// TEMPORARY harness; replaced by the docs page's.
func needChromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("PETSTORE_TEST_REQUIRE_CHROMIUM") != "" {
		t.Fatal("chromium not installed")
	}
	t.Skip("chromium not installed")
	return ""
}

func chromiumDumpDOM(t *testing.T, bin, url string, budget time.Duration) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), budget+30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-default-browser-check",
		"--user-data-dir="+filepath.Join(t.TempDir(), "profile"),
		"--virtual-time-budget="+itoaMS(budget), "--dump-dom", url)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("chromium: %v", err)
	}
	return string(out)
}

func itoaMS(d time.Duration) string { return strconv.FormatInt(d.Milliseconds(), 10) }
