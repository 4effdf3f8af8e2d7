package catalog

import (
	"strings"
	"testing"
)

// A key's create is answered again only for the request that made it: the
// category it made is that request, validated.
func TestSameAs(t *testing.T) {
	t.Parallel()
	made := Category{ID: 7, Name: "dog", Description: "loyal", HasDescription: true}.AppendJSON(nil)
	long := strings.Repeat("é", 600) // past SameAs's buffer
	madeLong := Category{ID: 8, Name: "dog", Description: long, HasDescription: true}.AppendJSON(nil)
	for _, tc := range []struct {
		name   string
		nc     NewCategory
		id     int64
		made   []byte
		replay bool
	}{
		{"same", NewCategory{Name: "dog", Description: "loyal", HasDescription: true}, 7, made, true},
		{"same, long", NewCategory{Name: "dog", Description: long, HasDescription: true}, 8, madeLong, true},
		{"other name", NewCategory{Name: "Dog", Description: "loyal", HasDescription: true}, 7, made, false},
		{"other description", NewCategory{Name: "dog", Description: "loyal!", HasDescription: true}, 7, made, false},
		{"no description", NewCategory{Name: "dog"}, 7, made, false},
		{"empty description", NewCategory{Name: "dog", HasDescription: true}, 7, made, false},
		{"long against short", NewCategory{Name: "dog", Description: long, HasDescription: true}, 7, made, false},
	} {
		if got := tc.nc.SameAs(tc.made, tc.id); got != tc.replay {
			t.Errorf("%s: SameAs got %v, want %v", tc.name, got, tc.replay)
		}
	}
	noDesc := Category{ID: 9, Name: "cat"}.AppendJSON(nil)
	if (NewCategory{Name: "cat", HasDescription: true}).SameAs(noDesc, 9) {
		t.Errorf("an empty description against none: SameAs is true")
	}
	if !(NewCategory{Name: "cat"}).SameAs(noDesc, 9) {
		t.Errorf("no description against none: SameAs is false")
	}
}
