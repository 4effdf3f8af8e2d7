// Command answercost accounts for the instructions two servers spend per
// answer, side by side: it reads the callgrind profiles (valgrind
// --tool=callgrind --dump-instr=yes) of both under the same requests, sums
// each instruction's own cost into the function of the binary's symbol
// table that holds it (not callgrind's idea of the current function, which
// goroutine switches confuse), and prints, per answer, the instructions of
// each group of functions and of the functions that differ most.
// bench/answers.sh runs it; docs/performance.md shows its tables.
//
//	answercost -n ANSWERS [-m ANSWERS] NAME=PROFILE,BINARY NAME=PROFILE,BINARY
//
// -n is the answers the first server gave while profiled, -m the second's
// (the same by default).
package main

import (
	"bufio"
	"debug/elf"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// groups name where an instruction goes, tried in order against the name
// of its function; the first that matches takes it.
var groups = []struct {
	name string
	re   *regexp.Regexp
}{
	{"API key check (SHA-256 of the key)", regexp.MustCompile(`^crypto/|/apikey\.`)},
	{"access log line", regexp.MustCompile(`/accesslog\.|/rawjson\.appendQuoted|/logsink\.|strconv\.(formatBase10|Append|genericFtoa|fmtF|dbox|trimZeros|formatDigits|umul|small)|^encoding/hex\.`)},
	{"petstore's handlers and middleware", regexp.MustCompile(`^main\.|^petstore/`)},
	{"response header (net/http)", regexp.MustCompile(`^net/http\.(Header\.|\(\*chunkWriter\)|\(\*response\)\.(WriteHeader|Write|write)|extraHeader|appendTime)|^time\.(Time\.)?(append|AppendFormat|locabs)|^time\.(nextStdChunk|absDays|absSeconds|absClock|\(\*Location\))|^slices\.|^sort\.|^cmpbody|^strings\.\(\*byteReplacer\)|^bufio\.\(\*Writer\)`)},
	{"request parsing (net/http, textproto, url)", regexp.MustCompile(`^net/textproto\.|^net/url\.|strconv\.Parse|^net/http\.(readRequest|\(\*conn\)\.readRequest|parse|\(\*Request\)|Header\.get|validMethod|\(\*ServeMux\)|\(\*routingNode\)|\(\*pattern\)|cleanPath|stripHostPort)|httpguts|^bufio\.\(\*Reader\)|^path\.|^strings\.|indexbytebody|countbody|memeqbody`)},
	{"maps (headers, routes)", regexp.MustCompile(`^internal/runtime/maps\.|^runtime\.map|aeshash|strhash|memhash`)},
	{"allocation", regexp.MustCompile(`^runtime\.(mallocgc|newobject|newarray|makeslice|makemap|growslice|slicebytetostring|stringtoslicebyte|rawbyteslice|rawstring|concatstring|\(\*mspan\)\.writeHeapBits|\(\*mcache\)|\(\*mcentral\)|\(\*mheap\)|nextFreeFast|memclrNoHeapPointers|heapSetType|deductAssistCredit|gcAssistAlloc|publicationBarrier)`)},
	{"copying (memmove)", regexp.MustCompile(`^runtime\.(memmove|typedmemmove|typedslicecopy|wbMove)`)},
	{"garbage collection", regexp.MustCompile(`^runtime\.(gc|scan|greyobject|findObject|markBits|\(\*gcWork\)|\(\*gcBits\)|wbBuf|bulkBarrier|tryDeferToSpanScan|typePointers|spanOf|heapBits|sweep|\(\*sweep|\(\*mspan\)|\(\*pallocBits\)|\(\*pageAlloc\)|markroot|shade|\(\*spanSet\)|\(\*gcCPULimiter\)|\(\*gcControllerState\)|\(\*spanInlineMarkBits\)|\(\*stkframe\)|pcvalue|step|funcInfo|\(\*unwinder\)|\(\*moduledata\)|findfunc|readvarint|\(\*mspan\)|adjust|copystack|newstack|morestack|shrinkstack|stackalloc|stackfree)`)},
	{"runtime: scheduler, timers, clocks, locks", regexp.MustCompile(`^runtime\.|^sync\.|^internal/sync\.|^time\.|^context\.|^internal/chacha8rand|^internal/runtime/`)},
	{"network system calls' user side (net, poll, syscall)", regexp.MustCompile(`^net\.|^internal/poll\.|^syscall\.|^internal/syscall|^os\.`)},
	{"the rest of net/http (connection, bufio)", regexp.MustCompile(`^net/http\.|^bufio\.|^io\.`)},
}

type server struct {
	name   string
	total  float64            // instructions per answer
	byFunc map[string]float64 // instructions per answer
}

func main() {
	answers := flag.Float64("n", 0, "answers the first server gave while profiled")
	second := flag.Float64("m", 0, "answers the second server gave while profiled (default: -n)")
	top := flag.Int("top", 25, "functions to list that differ most")
	flag.Parse()
	if *answers <= 0 || flag.NArg() != 2 {
		fmt.Fprintln(os.Stderr, "usage: answercost -n ANSWERS [-m ANSWERS] NAME=PROFILE,BINARY NAME=PROFILE,BINARY")
		os.Exit(2)
	}
	if *second <= 0 {
		*second = *answers
	}
	var servers [2]server
	for i, arg := range flag.Args() {
		name, files, ok1 := strings.Cut(arg, "=")
		profile, binary, ok2 := strings.Cut(files, ",")
		if !ok1 || !ok2 {
			fmt.Fprintf(os.Stderr, "answercost: %q is not NAME=PROFILE,BINARY\n", arg)
			os.Exit(2)
		}
		n := *answers
		if i == 1 {
			n = *second
		}
		s, err := load(name, profile, binary, n)
		if err != nil {
			fmt.Fprintln(os.Stderr, "answercost:", err)
			os.Exit(1)
		}
		servers[i] = s
	}
	report(os.Stdout, servers, *top)
}

// load reads one server's profile and symbols.
func load(name, profile, binary string, answers float64) (server, error) {
	syms, err := symbols(binary)
	if err != nil {
		return server{}, err
	}
	f, err := os.Open(profile)
	if err != nil {
		return server{}, err
	}
	defer f.Close()
	byAddr, err := selfCost(f)
	if err != nil {
		return server{}, fmt.Errorf("%s: %w", profile, err)
	}
	s := server{name: name, byFunc: map[string]float64{}}
	for addr, cost := range byAddr {
		fn := "(outside the binary: the C library, the vDSO)"
		if i := sort.Search(len(syms), func(i int) bool { return syms[i].Value > addr }) - 1; i >= 0 && addr < syms[i].Value+syms[i].Size {
			fn = syms[i].Name
		}
		s.byFunc[fn] += float64(cost) / answers
		s.total += float64(cost) / answers
	}
	return s, nil
}

// symbols returns the function symbols of binary, by address.
func symbols(binary string) ([]elf.Symbol, error) {
	f, err := elf.Open(binary)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	all, err := f.Symbols()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", binary, err)
	}
	var funcs []elf.Symbol
	for _, s := range all {
		// Markers of no size (runtime.text, runtime.etext) share the
		// address of a function and would hide it.
		if elf.ST_TYPE(s.Info) == elf.STT_FUNC && s.Size > 0 {
			funcs = append(funcs, s)
		}
	}
	sort.Slice(funcs, func(i, j int) bool { return funcs[i].Value < funcs[j].Value })
	return funcs, nil
}

// selfCost sums the cost of each instruction address in a callgrind
// profile written with --dump-instr=yes (positions "instr line", one
// event). The line after a calls= line is the cost of the call, the
// callee's inclusive cost, and is not the caller's own.
func selfCost(r io.Reader) (map[uint64]int64, error) {
	byAddr := map[uint64]int64{}
	var addr uint64
	afterCalls, sawPositions := false, false
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "positions:") {
			if strings.TrimSpace(strings.TrimPrefix(line, "positions:")) != "instr line" {
				return nil, errors.New("not written with --dump-instr=yes")
			}
			sawPositions = true
			continue
		}
		if line == "" || !strings.ContainsRune("0123456789+-*", rune(line[0])) {
			afterCalls = strings.HasPrefix(line, "calls=")
			continue
		}
		fields := strings.Fields(line)
		if len(fields) < 3 {
			continue // a position without a cost
		}
		switch a := fields[0]; {
		case strings.HasPrefix(a, "0x"):
			v, err := strconv.ParseUint(a[2:], 16, 64)
			if err != nil {
				return nil, fmt.Errorf("address %q: %w", a, err)
			}
			addr = v
		case a[0] == '+' || a[0] == '-':
			d, err := strconv.ParseInt(a, 10, 64)
			if err != nil {
				return nil, fmt.Errorf("address %q: %w", a, err)
			}
			addr += uint64(d)
		}
		cost, err := strconv.ParseInt(fields[2], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("cost %q: %w", fields[2], err)
		}
		if afterCalls {
			afterCalls = false
			continue
		}
		byAddr[addr] += cost
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if !sawPositions {
		return nil, errors.New("not a callgrind profile")
	}
	return byAddr, nil
}

// groupOf returns the group fn's instructions are counted in.
func groupOf(fn string) string {
	for _, g := range groups {
		if g.re.MatchString(fn) {
			return g.name
		}
	}
	return "other"
}

func report(w io.Writer, s [2]server, top int) {
	a, b := s[0], s[1]
	fmt.Fprintf(w, "| instructions per answer | %s | %s | difference |\n|---|---:|---:|---:|\n", a.name, b.name)
	byGroup := [2]map[string]float64{{}, {}}
	for i := range s {
		for fn, c := range s[i].byFunc {
			byGroup[i][groupOf(fn)] += c
		}
	}
	names := make([]string, 0, len(groups)+1)
	for _, g := range groups {
		names = append(names, g.name)
	}
	names = append(names, "other")
	sort.SliceStable(names, func(i, j int) bool {
		return byGroup[0][names[i]]-byGroup[1][names[i]] > byGroup[0][names[j]]-byGroup[1][names[j]]
	})
	for _, g := range names {
		fmt.Fprintf(w, "| %s | %.0f | %.0f | %+.0f |\n", g, byGroup[0][g], byGroup[1][g], byGroup[0][g]-byGroup[1][g])
	}
	fmt.Fprintf(w, "| **all** | **%.0f** | **%.0f** | **%+.0f** |\n\n", a.total, b.total, a.total-b.total)

	fns := map[string]bool{}
	for i := range s {
		for fn := range s[i].byFunc {
			fns[fn] = true
		}
	}
	list := make([]string, 0, len(fns))
	for fn := range fns {
		list = append(list, fn)
	}
	diff := func(fn string) float64 { return a.byFunc[fn] - b.byFunc[fn] }
	sort.Slice(list, func(i, j int) bool { return diff(list[i]) > diff(list[j]) })
	fmt.Fprintf(w, "| function (%d that differ most) | group | %s | %s | difference |\n|---|---|---:|---:|---:|\n", top, a.name, b.name)
	for _, fn := range list[:min(top, len(list))] {
		fmt.Fprintf(w, "| `%s` | %s | %.0f | %.0f | %+.0f |\n", fn, groupOf(fn), a.byFunc[fn], b.byFunc[fn], diff(fn))
	}
}
