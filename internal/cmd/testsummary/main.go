// Command testsummary runs `go test -json` with the arguments it is given and
// prints what `go test` prints without -v: each package's result, and the
// output of every test that failed. Then it prints a SKIPPED: block that
// groups the skipped tests by the reason they gave (etcd not installed,
// promtool not installed, …), so a skip is seen without -v. It exits with
// go test's status.
//
//	go run ./internal/cmd/testsummary -race -count=1 ./...
//
// `make test` runs the suite through it. GO in the environment names the go
// command to run (default: go on PATH).
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
)

func main() {
	os.Exit(run(os.Args[1:], os.Getenv, os.Stdout, os.Stderr))
}

// run runs go test with args and returns the exit status to leave with.
func run(args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	goCmd := getenv("GO")
	if goCmd == "" {
		goCmd = "go"
	}
	cmd := exec.Command(goCmd, append([]string{"test", "-json"}, args...)...)
	cmd.Stderr = stderr
	events, err := cmd.StdoutPipe()
	if err != nil {
		fmt.Fprintln(stderr, "testsummary:", err)
		return 2
	}
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(stderr, "testsummary:", err)
		return 2
	}
	skipped, readErr := summarise(events, stdout)
	waitErr := cmd.Wait()
	printSkipped(stdout, skipped)
	if readErr != nil {
		fmt.Fprintln(stderr, "testsummary: reading go test's output:", readErr)
		return 2
	}
	var exit *exec.ExitError
	if errors.As(waitErr, &exit) {
		return exit.ExitCode()
	}
	if waitErr != nil {
		fmt.Fprintln(stderr, "testsummary:", waitErr)
		return 2
	}
	return 0
}

// event is one line of `go test -json` (cmd/test2json).
type event struct {
	Action  string
	Package string
	Test    string
	Output  string
}

// summarise reads go test's events, writes to out what go test writes
// without -v, and returns the skipped tests grouped by their reason.
func summarise(events io.Reader, out io.Writer) (map[string][]string, error) {
	skipped := map[string][]string{}
	pending := map[[2]string][]string{} // a running test's output, by package and test
	dec := json.NewDecoder(bufio.NewReader(events))
	for {
		var e event
		if err := dec.Decode(&e); err == io.EOF {
			return skipped, nil
		} else if err != nil {
			return skipped, err
		}
		key := [2]string{e.Package, e.Test}
		switch {
		case e.Action == "build-output":
			io.WriteString(out, e.Output)
		case e.Action == "output" && e.Test == "":
			if e.Output != "PASS\n" && !strings.HasPrefix(e.Output, "=== ") {
				io.WriteString(out, e.Output)
			}
		case e.Action == "output":
			pending[key] = append(pending[key], e.Output)
		case e.Test == "":
		case e.Action == "fail":
			for _, line := range pending[key] {
				if !strings.HasPrefix(line, "=== ") {
					io.WriteString(out, line)
				}
			}
			delete(pending, key)
		case e.Action == "skip":
			reason := skipReason(pending[key])
			skipped[reason] = append(skipped[reason], strings.TrimPrefix(e.Package+" ", "petstore ")+e.Test)
			delete(pending, key)
		case e.Action == "pass":
			delete(pending, key)
		}
	}
}

// skipReason is what a skipped test said, without go test's framing
// ("=== RUN", "--- SKIP") and without the file:line each message starts with.
func skipReason(output []string) string {
	var said []string
	for _, line := range output {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "=== ") || strings.HasPrefix(line, "--- ") {
			continue
		}
		if loc, msg, ok := strings.Cut(line, ": "); ok && strings.Contains(loc, ".go:") && !strings.Contains(loc, " ") {
			line = msg
		}
		said = append(said, strings.Trim(line, "* "))
	}
	if len(said) == 0 {
		return "no reason given"
	}
	return strings.Join(said, " ")
}

// printSkipped writes the SKIPPED: block: every reason, with the tests that
// gave it (the first few by name).
func printSkipped(out io.Writer, skipped map[string][]string) {
	if len(skipped) == 0 {
		fmt.Fprintln(out, "SKIPPED: none")
		return
	}
	n := 0
	for _, tests := range skipped {
		n += len(tests)
	}
	fmt.Fprintf(out, "SKIPPED: %d %s, for %d %s:\n", n, plural(n, "test"), len(skipped), plural(len(skipped), "reason"))
	reasons := make([]string, 0, len(skipped))
	for r := range skipped {
		reasons = append(reasons, r)
	}
	slices.Sort(reasons)
	const named = 4
	for _, r := range reasons {
		tests := skipped[r]
		slices.Sort(tests)
		names := strings.Join(tests[:min(len(tests), named)], ", ")
		if len(tests) > named {
			names += fmt.Sprintf(" and %d more", len(tests)-named)
		}
		fmt.Fprintf(out, "  - %s\n    (%d: %s)\n", r, len(tests), names)
	}
}

func plural(n int, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}
