// Command faults is a Jepsen-style fault harness for petstore.
//
// It runs a petstore binary under faults and checks that what clients were
// told is true. On a journal file it injects disk errors with strace
// (fdatasync EIO, a failed undo, pwrite64 ENOSPC) and kill -9; on a
// 3-member etcd cluster with 3 petstores, each petstore reaching each
// member through a TCP proxy of the harness, it kills and freezes members
// and petstores, cuts petstores off and loses etcd's answers. Clients
// create, list and get throughout; every operation is recorded (one JSONL
// history per scenario), and the history is checked against the final
// state: every 201 present; nothing present whose every attempt failed
// definitely; each create present at most once; names unique; ids
// consecutive and in real-time order; Idempotency-Key retries replay;
// lists within the bound; no 201 after a failed fdatasync; reads agree
// with the final state. Each scenario also checks that its fault took
// effect (one that never bit proves nothing, and fails) and what the spec
// says the service answers under it.
//
// It is a module of its own, standard library only, never imported by
// petstore. It needs Linux, root (strace attaches to petstore, a tmpfs is
// mounted), etcd and strace. From the repository:
//
//	go build -o /tmp/petstore . && go -C faults run . -bin /tmp/petstore   # short set, about 2.5 min
//	go -C faults run . -bin /tmp/petstore -set all                         # every scenario, about 6 min
//	go -C faults run . -bin /tmp/petstore -scenarios etcd-lost-answers,journal-kill9 -seed 7
//	go -C faults run . -list
//
// Each run prints its seed and its directory (-out), which keeps per
// scenario the history (history.jsonl), the fault log (faults.jsonl), the
// logs of petstore, etcd and strace, and for the run report.txt and
// summary.json. The exit status is 0 only if every property held in every
// scenario, 1 if one failed, 2 if a scenario could not be run.
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// config is the run's settings, from the flags.
type config struct {
	bin       string
	set       string
	only      []string
	seed      int64
	out       string
	duration  time.Duration
	clients   int
	kills     int // kill -9 cycles of journal-kill9
	cycles    int // kill cycles of etcd-leader-kill
	full      bool
	listNames bool
}

func parseFlags(args []string, stderr io.Writer) (config, error) {
	var c config
	var only string
	fs := flag.NewFlagSet("faults", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&c.bin, "bin", "", "petstore binary to test (required)")
	fs.StringVar(&c.set, "set", "short", "scenario set: short or all")
	fs.StringVar(&only, "scenarios", "", "comma-separated scenarios to run (instead of -set)")
	fs.Int64Var(&c.seed, "seed", 0, "seed of the run's random choices (default: from the time; printed)")
	fs.StringVar(&c.out, "out", "", "run directory (default: a new temporary directory; printed)")
	fs.DurationVar(&c.duration, "duration", 0, "least time clients run in a scenario (default 10s, 25s with -set all)")
	fs.IntVar(&c.clients, "clients", 8, "client goroutines per scenario")
	fs.IntVar(&c.kills, "kills", 0, "kill -9 cycles of journal-kill9 (default 3, 20 with -set all)")
	fs.BoolVar(&c.listNames, "list", false, "list the scenarios and exit")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("unexpected arguments: %v", fs.Args())
	}
	if c.set != "short" && c.set != "all" {
		return c, fmt.Errorf("-set must be short or all, not %q", c.set)
	}
	c.full = c.set == "all"
	if only != "" {
		c.only = strings.Split(only, ",")
	}
	if c.seed == 0 {
		c.seed = time.Now().UnixNano() % 1_000_000_000
	}
	c.duration = pick(c.duration, c.full, 10*time.Second, 25*time.Second)
	c.kills = pick(c.kills, c.full, 3, 20)
	c.cycles = pick(0, c.full, 1, 2)
	c.clients = max(1, c.clients)
	return c, nil
}

// pick returns v if it was set, else the short or full default.
func pick[T comparable](v T, full bool, short, all T) T {
	var zero T
	switch {
	case v != zero:
		return v
	case full:
		return all
	default:
		return short
	}
}

// allScenarios lists every scenario, in the order a run takes them.
func allScenarios() []scenario { return append(journalScenarios(), clusterScenarios()...) }

// selectScenarios returns the scenarios cfg asks for.
func selectScenarios(cfg config) ([]scenario, error) {
	all := allScenarios()
	if cfg.only == nil {
		var out []scenario
		for _, sc := range all {
			if cfg.full || sc.short {
				out = append(out, sc)
			}
		}
		return out, nil
	}
	var out []scenario
	for _, name := range cfg.only {
		found := false
		for _, sc := range all {
			if sc.name == strings.TrimSpace(name) {
				out, found = append(out, sc), true
			}
		}
		if !found {
			return nil, fmt.Errorf("no scenario %q (see -list)", name)
		}
	}
	return out, nil
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	cfg, err := parseFlags(args, stderr)
	if err != nil {
		fmt.Fprintln(stderr, "faults:", err)
		return 2
	}
	if cfg.listNames {
		for _, sc := range allScenarios() {
			set := "all"
			if sc.short {
				set = "short, all"
			}
			fmt.Fprintf(stdout, "%-22s (%s)  %s\n", sc.name, set, sc.about)
		}
		return 0
	}
	scs, err := selectScenarios(cfg)
	if err == nil {
		err = prepare(&cfg)
	}
	if err != nil {
		fmt.Fprintln(stderr, "faults:", err)
		return 2
	}
	e := &env{cfg: cfg, procs: newProcs(), clock: clock{start: time.Now()}, key: newKey(),
		http: &http.Client{Timeout: clientTimeout}}
	defer e.procs.close()
	fmt.Fprintf(stdout, "faults: %d scenario(s), seed %d, run directory %s, binary %s\n", len(scs), cfg.seed, cfg.out, cfg.bin)
	return runAll(ctx, e, scs, stdout)
}

// prepare checks the binary and the tools, and makes the run directory.
func prepare(cfg *config) error {
	if cfg.bin == "" {
		return errors.New("-bin PATH (the petstore binary) is required")
	}
	abs, err := filepath.Abs(cfg.bin)
	if err != nil {
		return err
	}
	if info, err := os.Stat(abs); err != nil || info.IsDir() || info.Mode()&0o111 == 0 {
		return fmt.Errorf("-bin %s: not an executable file", cfg.bin)
	}
	cfg.bin = abs
	for _, tool := range []string{"etcd", "strace"} {
		if _, err := lookPath(tool); err != nil {
			return err
		}
	}
	if cfg.out == "" {
		cfg.out, err = os.MkdirTemp("", "petstore-faults-")
		return err
	}
	return os.MkdirAll(cfg.out, 0o700)
}

// newKey makes the run's API key: 32 random bytes in hex.
func newKey() string {
	b := make([]byte, 32)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// runAll runs the scenarios in turn, prints each report and the summary,
// and returns the exit status.
func runAll(ctx context.Context, e *env, scs []scenario, stdout io.Writer) int {
	report, err := os.Create(filepath.Join(e.cfg.out, "report.txt"))
	if err != nil {
		fmt.Fprintln(stdout, "faults:", err)
		return 2
	}
	defer report.Close()
	w := io.MultiWriter(stdout, report)
	began := time.Now()
	var outs []*outcome
	for _, sc := range scs {
		if ctx.Err() != nil {
			break
		}
		fmt.Fprintf(stdout, "--- %s ...\n", sc.name)
		o := runScenario(ctx, e, sc)
		o.print(w)
		outs = append(outs, o)
		if left := e.procs.leftovers(); len(left) > 0 {
			fmt.Fprintf(w, "    processes left running after the scenario (killed now): %v\n", left)
		}
	}
	writeSummary(e.cfg.out, outs)
	return summarize(ctx, w, outs, len(scs), time.Since(began), e.cfg)
}

// shortName is a property's number, or the tag before the colon of a
// scenario's own expectation ("fault: …", "recovers: …").
func shortName(name string) string {
	first, _, _ := strings.Cut(name, " ")
	return strings.TrimSuffix(first, ":")
}

// summarize prints one line per scenario and returns the exit status.
func summarize(ctx context.Context, w io.Writer, outs []*outcome, want int, took time.Duration, cfg config) int {
	code := 0
	fmt.Fprintf(w, "\n=== summary (seed %d, %.0fs, run directory %s)\n", cfg.seed, took.Seconds(), cfg.out)
	for _, o := range outs {
		verdict := "PASS"
		switch {
		case o.Skipped != "":
			verdict = "SKIPPED"
		case o.Err != "":
			verdict, code = "ERROR", 2
		case !o.passed():
			verdict, code = "FAIL", max(code, 1)
			var failed []string
			for _, p := range o.Props {
				if p.Status == statusFail {
					failed = append(failed, shortName(p.Name))
				}
			}
			verdict += " (" + strings.Join(failed, ", ") + ")"
		}
		fmt.Fprintf(w, "  %-22s %5.1fs  creates %-40s %s\n", o.Name, o.Seconds, countLine(o.Creates), verdict)
	}
	if ctx.Err() != nil || len(outs) < want {
		fmt.Fprintf(w, "  interrupted: %d of %d scenarios ran\n", len(outs), want)
		return 2
	}
	return code
}
