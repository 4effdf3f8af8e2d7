package openapi

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"
)

// Statuses returns the statuses each operation of doc, a document Build
// made, may answer: its responses, in ascending order, keyed by method and
// path as Operation gives them ("GET /v1/categories"). Build makes every
// status an operation answers one of its responses, so this is the set a
// counter of the operation's answers needs room for.
func Statuses(doc []byte) (map[string][]int, error) {
	var parsed struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(doc, &parsed); err != nil {
		return nil, err
	}
	out := map[string][]int{}
	for docPath, item := range parsed.Paths {
		path := docPath
		if _, atOrigin := item["servers"]; !atOrigin {
			path = apiBase + docPath
		}
		for method, raw := range item {
			var op struct {
				Responses map[string]json.RawMessage `json:"responses"`
			}
			if method == "servers" || json.Unmarshal(raw, &op) != nil || op.Responses == nil {
				continue
			}
			var statuses []int
			for s := range op.Responses {
				if n, err := strconv.Atoi(s); err == nil {
					statuses = append(statuses, n)
				}
			}
			slices.Sort(statuses)
			out[strings.ToUpper(method)+" "+path] = statuses
		}
	}
	return out, nil
}
