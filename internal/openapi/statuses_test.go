package openapi

import (
	"reflect"
	"testing"
)

func TestStatuses(t *testing.T) {
	t.Parallel()
	doc := []byte(`{"paths": {
		"/things": {"get": {"responses": {"200": {}, "404": {}, "400": {}}}, "post": {"responses": {"201": {}}}},
		"/healthz": {"servers": [{"url": "/"}], "get": {"responses": {"503": {}, "200": {}}}},
		"/bare": {"summary": "no operations", "parameters": []}
	}}`)
	got, err := Statuses(doc)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]int{
		"GET " + apiBase + "/things":  {200, 400, 404},
		"POST " + apiBase + "/things": {201},
		"GET /healthz":                {200, 503},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Statuses: got %v, want %v", got, want)
	}
	if _, err := Statuses([]byte(`{"paths": [`)); err == nil {
		t.Error("Statuses of a broken document: no error")
	}
}
