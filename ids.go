package main

import "strconv"

// parseID parses a canonical positive decimal int64: "1", not "+1", "01",
// "-1" or "1.0".
func parseID(s string) (int64, bool) {
	if s == "" || s[0] < '1' || s[0] > '9' || len(s) > 19 {
		return 0, false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
	}
	id, err := strconv.ParseInt(s, 10, 64)
	return id, err == nil
}
