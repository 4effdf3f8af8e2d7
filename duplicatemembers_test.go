package main

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// A member given twice is invalid_json whatever else is wrong with the
// body (docs/security.md, "Requests").
func TestDuplicateMembers(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("k", 500)
	tests := []struct {
		name    string
		body    string
		mention string
	}{
		{"unknown member twice", `{"name":"a","x":1,"x":2}`, `"x"`},
		{"unknown member twice, bad name", `{"x":1,"name":5,"x":2}`, `"x"`},
		{"unknown member twice, no name", `{"id":1,"id":2}`, `"id"`},
		{"escaped spelling of an unknown member", `{"colour":1,"col\u006fur":2,"name":"a"}`, `"colour"`},
		{"name twice, description wrong", `{"name":"a","description":5,"name":"b"}`, `"name"`},
		{"name twice, after many unknown members", `{"a":1,"b":2,"c":3,"d":4,"e":5,"f":6,"g":7,"h":8,"i":9,"j":10,"k":11,"name":"x","name":"y"}`, `"name"`},
		{"invisible member twice", `{"\u200b":1,"\u200b":2}`, `"\u200b"`},
		{"long member twice", `{"` + long + `":1,"` + long + `":2}`, `"` + strings.Repeat("k", 64) + `…"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			env := newTestEnv(t)
			eb := mustError(t, postCategory(t, env, tt.body), http.StatusBadRequest, codeInvalidJSON)
			mustMention(t, eb.Message, tt.mention, "more than once")
			if len(eb.Message) > 200 {
				t.Errorf("message has %d bytes, want a short one: %q", len(eb.Message), eb.Message)
			}
		})
	}
	// Many members, the twin far from its first: a long body goes through
	// the map, not the pairwise check.
	var b strings.Builder
	b.WriteString(`{"name":"a"`)
	for i := range 1000 {
		fmt.Fprintf(&b, `,"m%d":%d`, i, i)
	}
	b.WriteString(`,"m3":0}`)
	eb := mustError(t, postCategory(t, newTestEnv(t), b.String()), http.StatusBadRequest, codeInvalidJSON)
	mustMention(t, eb.Message, `"m3"`)
}
