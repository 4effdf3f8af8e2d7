package main

import (
	"bytes"
	"strings"
	"testing"
)

// A stream as `go test -json` writes it: one test passes, one fails, two
// skip for one reason and one for another, with go test's framing lines.
const stream = `{"Action":"start","Package":"petstore"}
{"Action":"run","Package":"petstore","Test":"TestPass"}
{"Action":"output","Package":"petstore","Test":"TestPass","Output":"=== RUN   TestPass\n"}
{"Action":"output","Package":"petstore","Test":"TestPass","Output":"    a_test.go:9: chatter of a passing test\n"}
{"Action":"pass","Package":"petstore","Test":"TestPass"}
{"Action":"output","Package":"petstore","Test":"TestFail","Output":"=== RUN   TestFail\n"}
{"Action":"output","Package":"petstore","Test":"TestFail","Output":"    a_test.go:12: got 1, want 2\n"}
{"Action":"output","Package":"petstore","Test":"TestFail","Output":"--- FAIL: TestFail (0.00s)\n"}
{"Action":"fail","Package":"petstore","Test":"TestFail"}
{"Action":"output","Package":"petstore","Test":"TestEtcdA","Output":"=== RUN   TestEtcdA\n"}
{"Action":"output","Package":"petstore","Test":"TestEtcdA","Output":"    etcd_test.go:55: ***** SKIPPED: no etcd *****\n"}
{"Action":"output","Package":"petstore","Test":"TestEtcdA","Output":"--- SKIP: TestEtcdA (0.00s)\n"}
{"Action":"skip","Package":"petstore","Test":"TestEtcdA"}
{"Action":"output","Package":"petstore/internal/store","Test":"TestEtcdB","Output":"    etcd_test.go:55: ***** SKIPPED: no etcd *****\n"}
{"Action":"skip","Package":"petstore/internal/store","Test":"TestEtcdB"}
{"Action":"output","Package":"petstore","Test":"TestQuiet","Output":"--- SKIP: TestQuiet (0.00s)\n"}
{"Action":"skip","Package":"petstore","Test":"TestQuiet"}
{"Action":"output","Package":"petstore","Output":"FAIL\n"}
{"Action":"output","Package":"petstore","Output":"FAIL\tpetstore\t0.1s\n"}
{"Action":"fail","Package":"petstore"}
{"ImportPath":"petstore/broken","Action":"build-output","Output":"broken/x.go:1:1: expected 'package'\n"}
`

func TestSummarise(t *testing.T) {
	var out bytes.Buffer
	skipped, err := summarise(strings.NewReader(stream), &out)
	if err != nil {
		t.Fatal(err)
	}
	want := "    a_test.go:12: got 1, want 2\n--- FAIL: TestFail (0.00s)\nFAIL\nFAIL\tpetstore\t0.1s\nbroken/x.go:1:1: expected 'package'\n"
	if out.String() != want {
		t.Errorf("output:\ngot  %q\nwant %q", out.String(), want)
	}
	if got := skipped["SKIPPED: no etcd"]; len(got) != 2 || got[0] != "TestEtcdA" || got[1] != "petstore/internal/store TestEtcdB" {
		t.Errorf("etcd skips: got %q, want TestEtcdA and petstore/internal/store TestEtcdB", got)
	}
	if got := skipped["no reason given"]; len(got) != 1 {
		t.Errorf("skip without a message: got %q, want TestQuiet", got)
	}

	var block bytes.Buffer
	printSkipped(&block, skipped)
	for _, want := range []string{"SKIPPED: 3 tests, for 2 reasons:", "  - SKIPPED: no etcd\n    (2: TestEtcdA, petstore/internal/store TestEtcdB)"} {
		if !strings.Contains(block.String(), want) {
			t.Errorf("SKIPPED block lacks %q:\n%s", want, block.String())
		}
	}
}

func TestSummariseRefusesWhatIsNotJSON(t *testing.T) {
	if _, err := summarise(strings.NewReader("ok petstore\n"), new(bytes.Buffer)); err == nil {
		t.Errorf("got no error for output that is not go test -json")
	}
}

func TestNoSkips(t *testing.T) {
	var out bytes.Buffer
	printSkipped(&out, nil)
	if out.String() != "SKIPPED: none\n" {
		t.Errorf("got %q, want SKIPPED: none", out.String())
	}
}
