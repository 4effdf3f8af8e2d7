package main

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
	"unicode"

	"petstore/internal/petstoretest"
)

// The documentation is tested as docs/architecture.md, "Documentation and
// its tests" describes: shell blocks marked offline run against a built
// binary, citations of docs/ in Go comments name real headings, and
// relative links resolve.

// docPages returns README.md and every page under docs/.
func docPages(t *testing.T) []string {
	t.Helper()
	pages, err := filepath.Glob("docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	return append([]string{"README.md"}, pages...)
}

// docBlock is a shell block of a page marked to run offline.
type docBlock struct {
	line       int    // of the opening fence, 1-based
	code       string // the block's text
	standalone bool   // starts what it needs; no server is given to it
	want       string // the plain block after it, if any: the expected output
}

// offlineBlocks returns the blocks of text marked <!-- offline --> or
// <!-- offline standalone --> on the line before their ```sh fence.
func offlineBlocks(text string) []docBlock {
	lines := strings.Split(text, "\n")
	var blocks []docBlock
	for i := 1; i < len(lines); i++ {
		mark := strings.TrimSpace(lines[i-1])
		if lines[i] != "```sh" || (mark != "<!-- offline -->" && mark != "<!-- offline standalone -->") {
			continue
		}
		b := docBlock{line: i + 1, standalone: mark == "<!-- offline standalone -->"}
		body, end := fencedBody(lines, i)
		b.code = body
		next := end + 1
		for next < len(lines) && strings.TrimSpace(lines[next]) == "" {
			next++
		}
		if next < len(lines) && lines[next] == "```" {
			b.want, _ = fencedBody(lines, next)
		}
		blocks = append(blocks, b)
		i = end
	}
	return blocks
}

// fencedBody returns the text between the fence at lines[open] and its
// closing fence, and the index of the closing fence.
func fencedBody(lines []string, open int) (string, int) {
	for end := open + 1; end < len(lines); end++ {
		if lines[end] == "```" {
			return strings.Join(lines[open+1:end], "\n") + "\n", end
		}
	}
	return strings.Join(lines[open+1:], "\n"), len(lines)
}

// TestDocsOfflineBlocks runs every block marked offline, page by page, in
// the order of the page: a page's blocks share one fresh petstore.
func TestDocsOfflineBlocks(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("curl is not installed: the documentation's shell blocks were NOT run")
	}
	for _, page := range docPages(t) {
		text, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		blocks := offlineBlocks(string(text))
		if len(blocks) == 0 {
			continue
		}
		t.Run(page, func(t *testing.T) {
			t.Parallel()
			bin := petstoretest.BinaryPath(t)
			dir := t.TempDir()
			if err := os.Symlink(bin, filepath.Join(dir, "petstore")); err != nil {
				t.Fatal(err)
			}
			var srv *petstoretest.Process
			ports := map[string]string{}
			for _, b := range blocks {
				if !b.standalone && srv == nil {
					srv = petstoretest.Start(t, nil)
				}
				script := docPorts(t, b.code, srv, ports)
				out, err := runDocBlock(dir, script, b.standalone)
				if err != nil {
					t.Errorf("%s:%d: %v; output:\n%s", page, b.line, err, out)
					continue
				}
				if err := matchInOrder(out, b.want); err != nil {
					t.Errorf("%s:%d: %v; output:\n%s", page, b.line, err, out)
				}
			}
		})
	}
}

var docPortRE = regexp.MustCompile(`\b(?:localhost|127\.0\.0\.1):(80\d\d)\b`)

// docPorts puts srv's address in place of localhost:8080 and 127.0.0.1:8080,
// and a free port of its own in place of every other 80NN (the same one for
// the same NN across a page).
func docPorts(t *testing.T, code string, srv *petstoretest.Process, ports map[string]string) string {
	return docPortRE.ReplaceAllStringFunc(code, func(m string) string {
		port := docPortRE.FindStringSubmatch(m)[1]
		if port == "8080" && srv != nil {
			return srv.Addr
		}
		if ports[port] == "" {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			ports[port] = ln.Addr().String()
			ln.Close()
		}
		return ports[port]
	})
}

// runDocBlock runs script with bash -e in dir, for at most a minute, and
// kills whatever it left running. A block of the page's shared petstore
// finds its key in PETSTORE_API_KEYS, as a reader's shell has it; a
// standalone block starts its own petstore and gets no PETSTORE_ variable,
// so that it works as pasted into a fresh shell.
func runDocBlock(dir, script string, standalone bool) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-e", "-c", script)
	cmd.Dir = dir
	cmd.Env = slices.DeleteFunc(os.Environ(), func(kv string) bool {
		return strings.HasPrefix(kv, "PETSTORE_") || strings.HasPrefix(kv, "GOMAXPROCS=")
	})
	if !standalone {
		cmd.Env = append(cmd.Env, "PETSTORE_API_KEYS="+petstoretest.Key)
	}
	cmd.Env = append(cmd.Env, "HOME="+dir)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if cmd.Process != nil {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // what the block left behind
	}
	if ctx.Err() != nil {
		err = fmt.Errorf("still running after a minute (%v)", err)
	}
	return strings.ReplaceAll(out.String(), "\r", ""), err
}

// matchInOrder reports whether every line of want appears in got, in order;
// … in a line of want stands for anything, and a line of only … is skipped.
func matchInOrder(got, want string) error {
	lines := strings.Split(got, "\n")
	at := 0
	for _, w := range strings.Split(strings.TrimRight(want, "\n"), "\n") {
		if w == "" || w == "…" {
			continue
		}
		parts := strings.Split(w, "…")
		for i := range parts {
			parts[i] = regexp.QuoteMeta(parts[i])
		}
		re := regexp.MustCompile("^" + strings.Join(parts, ".*") + "$")
		for at < len(lines) && !re.MatchString(lines[at]) {
			at++
		}
		if at == len(lines) {
			return fmt.Errorf("the output lacks %q (after the lines before it)", w)
		}
		at++
	}
	return nil
}

func TestMatchInOrder(t *testing.T) {
	got := "HTTP/1.1 201 Created\nContent-Type: application/json\nX-Request-Id: abc\n\n{\"id\":1}\n"
	for _, tt := range []struct {
		want string
		ok   bool
	}{
		{"HTTP/1.1 201 Created\n…\n{\"id\":1}\n", true},
		{"HTTP/1.1 201 Created\nX-Request-Id: …\n", true},
		{"{\"id\":1}\nHTTP/1.1 201 Created\n", false},
		{"HTTP/1.1 200 OK\n", false},
		{"", true},
	} {
		if err := matchInOrder(got, tt.want); (err == nil) != tt.ok {
			t.Errorf("matchInOrder(%q): got %v, want ok %v", tt.want, err, tt.ok)
		}
	}
}

// headings returns the headings of a Markdown page, outside fenced blocks.
func headings(text string) []string {
	var hs []string
	fenced := false
	for _, l := range strings.Split(text, "\n") {
		if strings.HasPrefix(l, "```") {
			fenced = !fenced
			continue
		}
		if !fenced && strings.HasPrefix(l, "#") {
			hs = append(hs, strings.TrimSpace(strings.TrimLeft(l, "#")))
		}
	}
	return hs
}

// anchor is the id GitHub gives a heading: lower case, punctuation
// dropped, spaces as hyphens.
func anchor(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case unicode.IsLetter(r), unicode.IsDigit(r), r == '-', r == '_':
			b.WriteRune(r)
		case r == ' ':
			b.WriteByte('-')
		}
	}
	return b.String()
}

// A comment that cites docs/<page>.md, "<section>" (the two may be split over
// comment lines) must name a page that exists and a heading in it.
var (
	docCitationRE  = regexp.MustCompile(`docs/([A-Za-z0-9_.-]+\.md),?\s+(?:section\s+)?"([^"]+)"`)
	commentBreakRE = regexp.MustCompile(`\n\s*//\s*`)
)

func TestDocsCitationsResolve(t *testing.T) {
	n := 0
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") && path != "." {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		// Join comment lines, so a citation split over two reads as one.
		joined := commentBreakRE.ReplaceAllString(string(src), " ")
		for _, m := range docCitationRE.FindAllStringSubmatch(joined, -1) {
			n++
			page, err := os.ReadFile(filepath.Join("docs", m[1]))
			if err != nil {
				t.Errorf("%s cites docs/%s, which does not exist", path, m[1])
				continue
			}
			if !slices.Contains(headings(string(page)), m[2]) {
				t.Errorf("%s cites docs/%s, %q: the page has no such heading", path, m[1], m[2])
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d citations of docs/ checked", n)
}

var mdLinkRE = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// Every relative link of README and docs/ names a file that exists, and its
// #anchor a heading of that page.
func TestDocsLinksResolve(t *testing.T) {
	for _, page := range docPages(t) {
		text, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range mdLinkRE.FindAllStringSubmatch(string(text), -1) {
			link := m[1]
			if strings.Contains(link, "://") || strings.HasPrefix(link, "mailto:") {
				continue
			}
			target, frag, _ := strings.Cut(link, "#")
			path := page
			if target != "" {
				path = filepath.Join(filepath.Dir(page), target)
			}
			body, err := os.ReadFile(path)
			if err != nil {
				if _, statErr := os.Stat(path); statErr != nil || frag != "" {
					t.Errorf("%s links to %s, which does not exist", page, link)
				}
				continue
			}
			if frag == "" {
				continue
			}
			if !slices.ContainsFunc(headings(string(body)), func(h string) bool { return anchor(h) == frag }) {
				t.Errorf("%s links to %s: %s has no heading with that anchor", page, link, path)
			}
		}
	}
}
