package main

import (
	"bytes"
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// manyMembersBody returns a body of nearly maxBodyBytes: the member
// {"name":name} then as many distinct one- to three-character unknown
// members as fit, and their number.
func manyMembersBody(name string) ([]byte, int) {
	const alphabet = "!#$%&'()*+,-./0123456789:;<=>?@ABCDEFGHIJKLMNOPQRSTUVWXYZ[]^_`abcdefghijklmnopqrstuvwxyz{|}~"
	var b bytes.Buffer
	b.WriteString(`{"name":` + name)
	n := 0
	for ; b.Len() < maxBodyBytes-16; n++ {
		b.WriteString(`,"`)
		for i := n; ; i = i/len(alphabet) - 1 {
			b.WriteByte(alphabet[i%len(alphabet)])
			if i < len(alphabet) {
				break
			}
		}
		b.WriteString(`":0`)
	}
	b.WriteString("}")
	return b.Bytes(), n
}

// A 1 MiB body of 130,000 distinct unknown members, and one of 174,758
// copies of one member (once answered with 4.5 MB, and a 3.7 MB access
// line), are answered in at most 4 KiB, listing at most ten problems
// and a count; the access line's error is at most 4 KiB too.
func TestManyUnknownMembersBoundedAnswer(t *testing.T) {
	t.Parallel()
	body, n := manyMembersBody("5")
	if n < 120_000 {
		t.Fatalf("built only %d members", n)
	}
	env := newTestEnv(t)
	rec := postCategory(t, env, string(body))
	if rec.Body.Len() > maxErrorText {
		t.Fatalf("error body has %d bytes, want at most %d", rec.Body.Len(), maxErrorText)
	}
	eb := mustError(t, rec, http.StatusBadRequest, codeUnknownField)
	// The field problem is always listed; nine unknown members fit beside it.
	mustMention(t, eb.Message, "name must be a string", `unknown field "!"`, `unknown field "*"`, fmt.Sprintf("and %d more", n-9))
	if strings.Contains(eb.Message, `unknown field "+"`) {
		t.Errorf("message lists more than ten problems: %q", eb.Message)
	}
	if got := strings.Count(eb.Message, "; "); got != 10 {
		t.Errorf("message has %d parts, want 10 problems and the count: %q", got+1, eb.Message)
	}
	if errText := accessLineError(t, env.logs.Bytes(), "/v1/categories"); len(errText) > maxErrorText {
		t.Errorf("access line error member has %d bytes, want at most %d", len(errText), maxErrorText)
	}

	copies := `{"name":"a"` + strings.Repeat(`,"x":0`, 174_758) + "}"
	env = newTestEnv(t)
	rec = postCategory(t, env, copies)
	eb = mustError(t, rec, http.StatusBadRequest, codeInvalidJSON)
	mustMention(t, eb.Message, `"x"`, "more than once")
	if rec.Body.Len() > maxErrorText {
		t.Errorf("error body has %d bytes, want at most %d", rec.Body.Len(), maxErrorText)
	}
	if errText := accessLineError(t, env.logs.Bytes(), "/v1/categories"); len(errText) > maxErrorText {
		t.Errorf("access line error member has %d bytes, want at most %d", len(errText), maxErrorText)
	}
}

// Exactly ten problems are listed without a count.
func TestTenProblemsListed(t *testing.T) {
	t.Parallel()
	body := `{"a":1,"b":2,"c":3,"d":4,"e":5,"f":6,"g":7,"h":8,"i":9,"name":""}`
	eb := mustError(t, postCategory(t, newTestEnv(t), body), http.StatusBadRequest, codeUnknownField)
	mustMention(t, eb.Message, `"a"`, `"i"`, "name must not be empty")
	if strings.Contains(eb.Message, "more") {
		t.Errorf("message of ten problems has a count: %q", eb.Message)
	}
}

// BenchmarkManyUnknownMembers measures the create of a 1 MiB body of tiny
// unknown members: linear work, whatever their number.
func BenchmarkManyUnknownMembers(b *testing.B) {
	body, _ := manyMembersBody(`"a"`)
	env := newTestEnv(b)
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		rec := postCategory(b, env, string(body))
		if rec.Code != http.StatusBadRequest || rec.Body.Len() > maxErrorText {
			b.Fatalf("got %d with %d bytes", rec.Code, rec.Body.Len())
		}
	}
}
