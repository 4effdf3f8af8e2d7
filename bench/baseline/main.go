// Command baseline is the yardstick of `make bench-load`: the least a
// standard-library server can do to answer petstore's two hot operations.
// GET /v1/categories writes precomputed bytes; POST /v1/categories decodes
// the body, appends the category to a slice under a mutex and encodes it.
// No auth, no log, no validation, no durability.
//
// Configuration: BASELINE_ADDR (default 127.0.0.1:18081), BASELINE_LIST,
// a file holding the list answer to serve, and BASELINE_TLS_CERT_FILE and
// BASELINE_TLS_KEY_FILE to serve HTTPS (HTTP/2 and HTTP/1.1) with that pair.
package main

import (
	"encoding/json"
	"fmt"
	"log"
	"net/http"
	"os"
	"strconv"
	"sync"
	"time"
)

type category struct {
	ID          int64  `json:"id"`
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
}

func main() {
	addr := os.Getenv("BASELINE_ADDR")
	if addr == "" {
		addr = "127.0.0.1:18081"
	}
	list := []byte("[]")
	if path := os.Getenv("BASELINE_LIST"); path != "" {
		var err error
		if list, err = os.ReadFile(path); err != nil {
			log.Fatal(err)
		}
	}
	listLength := []string{strconv.Itoa(len(list))}
	jsonType := []string{"application/json"}

	var (
		mu         sync.Mutex
		categories []category
	)
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/categories", func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h["Content-Type"] = jsonType
		h["Content-Length"] = listLength
		w.Write(list)
	})
	mux.HandleFunc("POST /v1/categories", func(w http.ResponseWriter, r *http.Request) {
		var c category
		if err := json.NewDecoder(r.Body).Decode(&c); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		mu.Lock()
		c.ID = int64(len(categories) + 1)
		categories = append(categories, c)
		mu.Unlock()
		body, _ := json.Marshal(c)
		w.Header()["Content-Type"] = jsonType
		w.WriteHeader(http.StatusCreated)
		w.Write(body)
	})
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(`{"status":"ok"}`))
	})
	srv := &http.Server{Addr: addr, Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	fmt.Fprintln(os.Stderr, "baseline listening on", addr)
	if cert := os.Getenv("BASELINE_TLS_CERT_FILE"); cert != "" {
		log.Fatal(srv.ListenAndServeTLS(cert, os.Getenv("BASELINE_TLS_KEY_FILE"))) // HTTP/2 and HTTP/1.1, as petstore
	}
	log.Fatal(srv.ListenAndServe())
}
