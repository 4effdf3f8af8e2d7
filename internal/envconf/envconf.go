// Package envconf reads a service's configuration from its environment,
// each kind of value one way. A variable that is empty or blank is unset;
// a value is trimmed of white space. A value that cannot be read is
// refused with an error that names the variable, quotes its first 40
// characters (control characters escaped), and says what is wanted with
// an example, so that an operator can fix it from the message alone.
//
// Vars lists the variables a service reads, with their defaults and
// help; Usage prints them for -h, and a Reader takes the default of an
// unset variable from the list, so that the help and the behaviour
// cannot disagree. A name missing from the list is a programming error:
// Reader panics on it. Unknowns names the variables of the environment that
// carry the service's prefix but are not in the list (misspellings, with
// the listed name nearest to each).
package envconf

import (
	"fmt"
	"io"
	"net"
	"regexp"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"petstore/internal/hostport"
	"petstore/internal/textcut"
)

// Var is one variable a service reads.
type Var struct {
	Name    string
	Default string // what an unset variable stands for; "" when none
	Help    string // for -h; lines after the first are indented under it
	Group   string // the heading it is listed under in -h; "" for the first list
}

// Usage writes vars for -h, group by group in the order they come: each
// variable's name, its help, and its default when it has one.
func Usage(w io.Writer, vars []Var) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	group := ""
	for _, v := range vars {
		if v.Group != group {
			tw.Flush()
			group = v.Group
			fmt.Fprintf(w, "\n%s\n\n", group)
		}
		help := v.Help
		if v.Default != "" {
			help += " (default " + v.Default + ")"
		}
		lines := strings.Split(help, "\n")
		fmt.Fprintf(tw, "  %s\t%s\n", v.Name, lines[0])
		for _, l := range lines[1:] {
			fmt.Fprintf(tw, "  \t%s\n", l)
		}
	}
	tw.Flush()
}

// Reader reads the variables of a list through getenv.
type Reader struct {
	getenv func(string) string
	vars   map[string]Var
}

// NewReader reads the variables vars lists through getenv.
func NewReader(getenv func(string) string, vars []Var) *Reader {
	r := &Reader{getenv: getenv, vars: make(map[string]Var, len(vars))}
	for _, v := range vars {
		r.vars[v.Name] = v
	}
	return r
}

func (r *Reader) known(name string) Var {
	v, ok := r.vars[name]
	if !ok {
		panic("envconf: " + name + " is not in the list of variables")
	}
	return v
}

// Lookup returns the value of name, trimmed, and whether it is set (not
// empty or blank). The default plays no part.
func (r *Reader) Lookup(name string) (string, bool) {
	r.known(name)
	v := strings.TrimSpace(r.getenv(name))
	return v, v != ""
}

// String returns the value of name, or its default when unset.
func (r *Reader) String(name string) string {
	if v, set := r.Lookup(name); set {
		return v
	}
	return r.known(name).Default
}

// Refuse returns the error of a value of name that is not what is wanted
// (want: "a positive whole number, such as 10"), quoting the value the
// one way every refusal here does.
func Refuse(name, value, want string) error {
	return fmt.Errorf("%s: %q is not %s", name, textcut.Truncate(value, 40), want)
}

// Duration reads a Go duration (90s, 15m, 24h) of at least atLeast; 1ns
// asks for a positive one.
func (r *Reader) Duration(name string, atLeast time.Duration) (time.Duration, error) {
	v := r.String(name)
	d, err := time.ParseDuration(v)
	if err != nil || d < atLeast {
		want := "a Go duration of " + atLeast.String() + " or more"
		if atLeast == 1 {
			want = "a positive Go duration"
		}
		return 0, Refuse(name, v, want+", such as "+r.example(name, "30s"))
	}
	return d, nil
}

// Count reads a positive whole number written plainly: digits only, no
// sign, no leading zero, no separators.
func (r *Reader) Count(name string) (int64, error) {
	v := r.String(name)
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 1 || strconv.FormatInt(n, 10) != v {
		return 0, Refuse(name, v, "a positive whole number written plainly, such as "+r.example(name, "100"))
	}
	return n, nil
}

// Instant reads an RFC 3339 instant (2026-01-01T00:00:00Z).
func (r *Reader) Instant(name string) (time.Time, error) {
	v := r.String(name)
	t, err := time.Parse(time.RFC3339, v)
	if err != nil {
		return t, Refuse(name, v, "an RFC 3339 instant, such as "+r.example(name, "2026-01-01T00:00:00Z"))
	}
	return t, nil
}

// Address reads a listen address, HOST:PORT or :PORT, the port 0 to 65535
// written plainly (0: any free port) and the host a name or an IP address.
func (r *Reader) Address(name string) (string, error) {
	v := r.String(name)
	host, port, err := net.SplitHostPort(v)
	if err == nil && port != "0" {
		_, err = hostport.Port(port)
	}
	if err == nil && host != "" {
		err = hostport.Host(host)
	}
	if err != nil {
		return "", Refuse(name, v, "HOST:PORT or :PORT, such as :8080 or 127.0.0.1:8080")
	}
	return v, nil
}

// example is the default of name when it has one, else fallback.
func (r *Reader) example(name, fallback string) string {
	if d := r.known(name).Default; d != "" {
		return d
	}
	return fallback
}

// Getenv returns a getenv over environ (NAME=value entries, as os.Environ
// gives them): the first entry of a name wins, as it does for os.Getenv.
func Getenv(environ []string) func(string) string {
	m := make(map[string]string, len(environ))
	for _, kv := range environ {
		name, value, _ := strings.Cut(kv, "=")
		if _, seen := m[name]; !seen {
			m[name] = value
		}
	}
	return func(name string) string { return m[name] }
}

// Unknown is a variable of the environment that looks meant for the
// service (its name has the service's prefix, in any case) but is not one
// the service reads.
type Unknown struct {
	Name    string
	Nearest string // the listed name it is likely a misspelling of; "" when none is close
}

// Unknowns returns the variables of environ whose names start with prefix,
// in any case, that vars does not list and skip does not claim (another
// system's variables that share the prefix), each once, in the order of
// environ. Only names are looked at, never values.
func Unknowns(environ []string, prefix string, vars []Var, skip func(name string) bool) []Unknown {
	known := make(map[string]bool, len(vars))
	for _, v := range vars {
		known[v.Name] = true
	}
	var out []Unknown
	seen := map[string]bool{}
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		if len(name) < len(prefix) || !strings.EqualFold(name[:len(prefix)], prefix) ||
			known[name] || seen[name] || skip(name) {
			continue
		}
		seen[name] = true
		out = append(out, Unknown{Name: name, Nearest: nearest(name, vars)})
	}
	return out
}

// nearest returns the name of vars closest to name, compared in upper case,
// when it is close enough to be a misspelling of it: at most two edits
// (a letter added, dropped, changed, or two swapped), three for a name of
// 16 letters or more; the first in the list wins a tie.
func nearest(name string, vars []Var) string {
	name = strings.ToUpper(name)
	best, bestDist := "", 0
	for _, v := range vars {
		limit := 2
		if len(v.Name) >= 16 {
			limit = 3
		}
		if max(len(name)-len(v.Name), len(v.Name)-len(name)) > limit {
			continue // at least that many edits apart, and a huge name costs no table
		}
		if d := editDistance(name, v.Name); d <= limit && (best == "" || d < bestDist) {
			best, bestDist = v.Name, d
		}
	}
	return best
}

// editDistance is the number of single-byte insertions, deletions,
// substitutions and swaps of adjacent bytes that turn a into b (the
// optimal string alignment distance).
func editDistance(a, b string) int {
	prev2 := make([]int, len(b)+1)
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(b)]
}

// ServiceLinks returns a test for the variables Kubernetes puts in every
// container for each Service of its namespace named service (in upper
// case): for a Service petstore, PETSTORE_SERVICE_HOST,
// PETSTORE_SERVICE_PORT, PETSTORE_SERVICE_PORT_HTTP, PETSTORE_PORT and
// PETSTORE_PORT_8080_TCP with its _PROTO, _PORT and _ADDR. With prefixed,
// those of Services whose names start with service and "-" too
// (PETSTORE_ETCD_PORT_2379_TCP for a Service petstore-etcd).
func ServiceLinks(service string, prefixed bool) func(name string) bool {
	others := ""
	if prefixed {
		others = `(_[A-Z0-9_]+)?`
	}
	re := regexp.MustCompile(`^` + regexp.QuoteMeta(service) + others +
		`_(SERVICE_HOST|SERVICE_PORT(_[A-Z0-9_]+)?|PORT(_[0-9]+_(TCP|UDP|SCTP)(_PROTO|_PORT|_ADDR)?)?)$`)
	return re.MatchString
}
