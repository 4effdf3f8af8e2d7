package catalog

import (
	"bytes"
	"strings"
	"testing"
)

// FuzzReplayRecord: whatever a record line holds, replay answers with the
// category added (and a key only from an "idempotency" member) or an error that adds nothing,
// never a panic.
func FuzzReplayRecord(f *testing.F) {
	key := strings.Repeat("A", 22)
	for _, line := range []string{
		`{"id":1,"name":"dog"}`,
		`{"id":1,"name":"dog","description":"Loyal"}`,
		`{"id":1,"name":"cat","idempotency":["` + key + `",1795455021]}`,
		`{"id":1,"name":"cat","idempotency":[ "` + key + `" , 1795455021 ]}`,
		`{"id":1,"name":"cat","idempotency":{"id":"` + strings.Repeat("0", 32) + `","request":"` + strings.Repeat("f", 32) + `","at":1795455021000}}`,
		`{"id":1,"name":"cat","idempotency":{"id":"` + strings.Repeat("0", 34) + `","request":"00","at":1}}`,
		`{"id":1,"name":"cat","idempotency":["` + key + `"]}`,
		`{"id":1,"name":"cat","idempotency":[]}`,
		`{"id":1,"name":"cat","idempotency":[1,2,3]}`,
		`{"id":1,"name":"cat","idempotency":"x","idempotency":[]}`,
		`{"id":0,"name":"x"}`,
		`{"id":1}`,
		`[]`,
		`{"id":1,"name":"\ud800"}`,
	} {
		f.Add([]byte(line))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		x := NewIndex(1, len(line))
		rec, err := ParseRecord(line)
		if err == nil {
			_, err = x.Append(rec.Category)
		}
		if err != nil {
			if len(x.items) != 0 {
				t.Errorf("a refused line %q added %d categories", line, len(x.items))
			}
			return
		}
		if len(x.items) != 1 {
			t.Fatalf("an accepted line %q added %d categories, want 1", line, len(x.items))
		}
		if rec.Key != nil && !bytes.Contains(line, []byte(`"idempotency"`)) {
			t.Errorf("line %q gave a key", line)
		}
	})
}
