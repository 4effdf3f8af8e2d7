package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// tracer is strace attached to a running petstore, failing chosen system
// calls. strace follows every thread with -f -p (it reports how many it
// attached), and injections are counted per syscall and per thread: the
// scenarios use "every call" or "the first few calls" only.
type tracer struct {
	proc    *child
	logPath string // strace -o: each traced call, injected ones marked
	errPath string // strace's own messages
	threads int
}

// attachStrace attaches strace to pid, tracing the calls of trace and
// failing as injects say (strace -e inject=… specs), and waits until it
// has attached every thread.
func attachStrace(ctx context.Context, e *env, dir string, pid int, trace, injects []string) (*tracer, error) {
	path, err := lookPath("strace")
	if err != nil {
		return nil, err
	}
	before := countThreads(pid)
	t := &tracer{logPath: filepath.Join(dir, "strace.log"), errPath: filepath.Join(dir, "strace.stderr")}
	// Injection needs the call to be traced: with trace=none strace
	// injects nothing.
	argv := []string{path, "-f", "-tt", "-p", strconv.Itoa(pid), "-o", t.logPath, "-e", "trace=" + strings.Join(trace, ",")}
	for _, in := range injects {
		argv = append(argv, "-e", "inject="+in)
	}
	if t.proc, err = e.procs.spawn("strace", argv, []string{"PATH=/usr/bin:/bin"}, t.errPath); err != nil {
		return nil, err
	}
	err = poll(ctx, 10*time.Second, 20*time.Millisecond, func() (bool, error) {
		if !t.proc.running() {
			return false, fmt.Errorf("strace exited: %v (see %s)", t.proc.err, t.errPath)
		}
		t.threads = attachedThreads(t.errPath)
		return t.threads > 0, nil
	})
	if err == nil && t.threads < min(before, countThreads(pid)) {
		err = fmt.Errorf("strace attached %d threads of %d", t.threads, before)
	}
	if err != nil {
		t.detach()
		return nil, fmt.Errorf("attaching strace to %d: %w", pid, err)
	}
	return t, nil
}

// attachedThreads reads strace's "Process N attached [with M threads]".
func attachedThreads(errPath string) int {
	b, _ := os.ReadFile(errPath)
	for _, line := range strings.Split(string(b), "\n") {
		if !strings.Contains(line, " attached") {
			continue
		}
		if _, rest, ok := strings.Cut(line, "attached with "); ok {
			n, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(rest), " threads"))
			return n
		}
		return 1
	}
	return 0
}

func countThreads(pid int) int {
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		return 0
	}
	return len(ents)
}

// detach stops strace with SIGTERM, on which it detaches from every
// thread and exits; the tracee runs on untouched.
func (t *tracer) detach() {
	if t.proc != nil {
		t.proc.stop(10 * time.Second)
	}
}

// injected counts the injected failures by syscall, from strace's log.
func (t *tracer) injected() map[string]int {
	out := map[string]int{}
	b, _ := os.ReadFile(t.logPath)
	for _, line := range strings.Split(string(b), "\n") {
		if !strings.HasSuffix(line, "(INJECTED)") {
			continue
		}
		// "PID HH:MM:SS.micros name(args) = -1 E… (INJECTED)", or
		// "PID HH:MM:SS.micros <... name resumed>) = …" when another
		// thread's line came between.
		f := strings.Fields(line)
		switch {
		case len(f) >= 4 && f[2] == "<...":
			out[f[3]]++
		case len(f) >= 3:
			name, _, _ := strings.Cut(f[2], "(")
			out[name]++
		}
	}
	return out
}
