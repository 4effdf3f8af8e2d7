package metrics

import (
	"bytes"
	"os"
	"runtime"
	"runtime/metrics"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// runtimeSamples are the runtime/metrics the go_* families come from.
var runtimeSamples = []struct {
	name, kind, help, source string
}{
	{"go_goroutines", "gauge", "Goroutines that currently exist.", "/sched/goroutines:goroutines"},
	{"go_sched_gomaxprocs_threads", "gauge", "The current GOMAXPROCS: how many threads may run Go code at once.", "/sched/gomaxprocs:threads"},
	{"go_memstats_heap_alloc_bytes", "gauge", "Bytes of heap objects, reachable or not yet swept.", "/memory/classes/heap/objects:bytes"},
	{"go_memstats_sys_bytes", "gauge", "Bytes of memory the Go runtime has mapped from the operating system.", "/memory/classes/total:bytes"},
	{"go_gc_cycles_total", "counter", "Completed garbage collection cycles.", "/gc/cycles/total:gc-cycles"},
}

// GoRuntime writes the go_* families: goroutines, GOMAXPROCS, heap and
// mapped memory, GC cycles, threads, and go_info.
func (e *Writer) GoRuntime() {
	samples := make([]metrics.Sample, len(runtimeSamples))
	for i, s := range runtimeSamples {
		samples[i].Name = s.source
	}
	metrics.Read(samples)
	for i, s := range runtimeSamples {
		var v float64
		switch samples[i].Value.Kind() {
		case metrics.KindUint64:
			v = float64(samples[i].Value.Uint64())
		case metrics.KindFloat64:
			v = samples[i].Value.Float64()
		default:
			continue // not in this Go's runtime
		}
		e.Family(s.name, s.kind, s.help)
		e.Sample(s.name, "", v)
	}
	threads, _ := runtime.ThreadCreateProfile(nil)
	e.Family("go_threads", "gauge", "OS threads created.")
	e.Sample("go_threads", "", float64(threads))
	e.Family("go_info", "gauge", "Always 1; the label says which Go built the program.")
	e.Sample("go_info", `version="`+EscapeLabel(runtime.Version())+`"`, 1)
}

// ProcessStart returns when the process started, from /proc as the
// Prometheus client reads it (the boot time plus the process's start in
// clock ticks), or now where /proc does not tell.
func ProcessStart() time.Time {
	stat, err1 := os.ReadFile("/proc/self/stat")
	boot, err2 := os.ReadFile("/proc/stat")
	if err1 != nil || err2 != nil {
		return time.Now()
	}
	var btime float64
	for line := range strings.Lines(string(boot)) {
		if v, ok := strings.CutPrefix(line, "btime "); ok {
			btime, _ = strconv.ParseFloat(strings.TrimSpace(v), 64)
		}
	}
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 || btime == 0 {
		return time.Now()
	}
	f := strings.Fields(string(stat[i+1:]))
	if len(f) < 20 {
		return time.Now()
	}
	ticks, err := strconv.ParseFloat(f[19], 64) // field 22: starttime
	if err != nil {
		return time.Now()
	}
	return time.Unix(0, int64((btime+ticks/clockTicks)*1e9))
}

// clockTicks is USER_HZ, the unit of /proc's times: 100 on every Linux
// platform Go supports.
const clockTicks = 100

// Process writes the process_* families, read from /proc/self as the
// Prometheus client reads them, with start (see ProcessStart) as the start
// time. On a system without /proc only the file limit and the start time
// are written.
func (e *Writer) Process(start time.Time) {
	if stat, err := os.ReadFile("/proc/self/stat"); err == nil {
		// Fields after the command, which is in parentheses and may hold
		// spaces: state is field 3, utime 14, stime 15, vsize 23, rss 24.
		if i := bytes.LastIndexByte(stat, ')'); i >= 0 {
			f := strings.Fields(string(stat[i+1:]))
			field := func(n int) float64 {
				if n-3 >= len(f) {
					return 0
				}
				v, _ := strconv.ParseFloat(f[n-3], 64)
				return v
			}
			e.Family("process_cpu_seconds_total", "counter", "User and system CPU time spent, in seconds.")
			e.Sample("process_cpu_seconds_total", "", (field(14)+field(15))/clockTicks)
			e.Family("process_virtual_memory_bytes", "gauge", "Virtual memory size in bytes.")
			e.Sample("process_virtual_memory_bytes", "", field(23))
			e.Family("process_resident_memory_bytes", "gauge", "Resident memory size in bytes.")
			e.Sample("process_resident_memory_bytes", "", field(24)*float64(os.Getpagesize()))
		}
	}
	if fds, err := os.ReadDir("/proc/self/fd"); err == nil {
		e.Family("process_open_fds", "gauge", "Open file descriptors.")
		e.Sample("process_open_fds", "", float64(len(fds)))
	}
	var lim syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim) == nil {
		e.Family("process_max_fds", "gauge", "The limit on open file descriptors.")
		e.Sample("process_max_fds", "", float64(lim.Cur))
	}
	e.Family("process_start_time_seconds", "gauge", "Start time of the process since the Unix epoch, in seconds.")
	e.Sample("process_start_time_seconds", "", float64(start.UnixNano())/1e9)
}
