package main

import (
	"errors"
	"fmt"
	"petstore/internal/apikey"
	"petstore/internal/catalog"
	"petstore/internal/cors"
	"petstore/internal/filewatch"
	"petstore/internal/ratelimit"
	"strconv"
	"strings"
	"time"

	"petstore/internal/store"
	"petstore/internal/textcut"
	"petstore/internal/tlsreload"
)

// config is the service's configuration, read from the environment
// (usage in main.go lists every variable; README.md, "Configuration";
// docs/operations.md, "Starting").
type config struct {
	addr         string
	keys         []apikey.Key // never logged: every key accepted at start
	envKeys      []apikey.Key // the keys of PETSTORE_API_KEYS, which stay for the life of the process
	keyFile      *apikey.File // PETSTORE_API_KEYS_FILE, read again to rotate keys; nil: none
	generatedKey bool         // keys holds one key made up at start
	dataPath     string
	etcd         store.EtcdConfig // when dataPath is an etcd:// or etcds:// URL
	pets         deprecation
	maxConns     int               // open connections at most, before the file limit lowers it
	rateLimit    *ratelimit.Budget // a request budget per key; nil: no limit
	idemTTL      time.Duration
	maxCats      int64            // PETSTORE_MAX_CATEGORIES: the catalogue holds at most this many
	cors         *cors.Policy     // PETSTORE_CORS_ORIGINS; nil: CORS off
	drainDelay   time.Duration    // PETSTORE_SHUTDOWN_DELAY: served on, not ready, once a stop signal arrives
	filePoll     time.Duration    // PETSTORE_FILE_POLL: how often the key file and TLS pair are looked at, and how long a change must stay put
	tls          *tlsreload.Files // the TLS certificate and key; nil: plain HTTP
}

// loadConfig reads the configuration through getenv. Every error names the
// variable at fault and never quotes a key.
func loadConfig(getenv func(string) string) (config, error) {
	cfg := config{
		addr:     getenvOr(getenv, "PETSTORE_ADDR", ":8080"),
		dataPath: getenvOr(getenv, "PETSTORE_DATA", "petstore.jsonl"),
	}
	var err error
	if cfg.pets, err = loadPetsDeprecation(getenv); err != nil {
		return cfg, err
	}
	if err := checkDataPath(cfg.dataPath); err != nil {
		return cfg, err
	}
	if store.IsEtcdURL(cfg.dataPath) {
		if cfg.etcd, err = loadEtcdConfig(getenv, cfg.dataPath); err != nil {
			return cfg, err
		}
	}
	if err := loadLimits(getenv, &cfg); err != nil {
		return cfg, err
	}
	if cfg.cors, err = cors.Parse(getenv("PETSTORE_CORS_ORIGINS")); err != nil {
		return cfg, fmt.Errorf("PETSTORE_CORS_ORIGINS: %w", err)
	}
	if v, set := lookup(getenv, "PETSTORE_SHUTDOWN_DELAY"); set {
		if cfg.drainDelay, err = time.ParseDuration(v); err != nil || cfg.drainDelay < 0 {
			return cfg, fmt.Errorf("PETSTORE_SHUTDOWN_DELAY: %q is not a Go duration of 0s or more, such as 15s", textcut.Truncate(v, 40))
		}
	}
	if err := loadKeys(getenv, &cfg); err != nil {
		return cfg, err
	}
	if cfg.tls, err = loadTLSFiles(getenv); err != nil {
		return cfg, err
	}
	if cfg.filePoll, err = loadFilePoll(getenv); err != nil {
		return cfg, err
	}
	return cfg, nil
}

// loadLimits reads the Idempotency-Key lifetime, the rate limit, and the
// caps on connections and categories into cfg.
func loadLimits(getenv func(string) string, cfg *config) error {
	var err error
	cfg.idemTTL = store.DefaultIdempotencyTTL
	if v, set := lookup(getenv, "PETSTORE_IDEMPOTENCY_TTL"); set {
		if cfg.idemTTL, err = time.ParseDuration(v); err != nil || cfg.idemTTL <= 0 {
			return fmt.Errorf("PETSTORE_IDEMPOTENCY_TTL: %q is not a positive Go duration such as 24h or 90m", v)
		}
	}
	if v, set := lookup(getenv, "PETSTORE_RATE_LIMIT"); set {
		rl, err := ratelimit.Parse(v)
		if err != nil {
			return fmt.Errorf("PETSTORE_RATE_LIMIT: %w", err)
		}
		cfg.rateLimit = &rl
	}
	if cfg.maxConns, err = parseMaxConns(getenv); err != nil {
		return err
	}
	cfg.maxCats = store.DefaultMaxCategories
	if v, set := lookup(getenv, "PETSTORE_MAX_CATEGORIES"); set {
		var ok bool
		if cfg.maxCats, ok = catalog.ParseID(v); !ok {
			return fmt.Errorf("PETSTORE_MAX_CATEGORIES: %q is not a positive whole number written plainly, such as 1000000", textcut.Truncate(v, 40))
		}
	}
	return nil
}

// loadKeys reads the accepted API keys into cfg: those of PETSTORE_API_KEYS
// and of PETSTORE_API_KEYS_FILE, or with neither, one generated key.
func loadKeys(getenv func(string) string, cfg *config) error {
	if v, set := lookup(getenv, "PETSTORE_API_KEYS"); set {
		keys, err := apikey.ParseList("PETSTORE_API_KEYS", v)
		if err != nil {
			return err
		}
		cfg.envKeys = keys
		cfg.keys = append(cfg.keys, keys...)
	}
	if path, set := lookup(getenv, "PETSTORE_API_KEYS_FILE"); set {
		file, keys, err := apikey.ReadFile("PETSTORE_API_KEYS_FILE", path)
		if err != nil {
			return err
		}
		cfg.keyFile = file
		cfg.keys = append(cfg.keys, keys...)
	}
	if len(cfg.keys) == 0 {
		key, err := apikey.Generate()
		if err != nil {
			return err
		}
		cfg.keys, cfg.generatedKey = []apikey.Key{key}, true
	}
	return nil
}

// The variables of the TLS pair (docs/operations.md, "TLS").
const (
	certVar = "PETSTORE_TLS_CERT_FILE"
	keyVar  = "PETSTORE_TLS_KEY_FILE"
)

// loadTLSFiles reads the pair the TLS variables name, or returns nil when
// neither is set. An error names the variable at fault, never key material.
func loadTLSFiles(getenv func(string) string) (*tlsreload.Files, error) {
	certFile, hasCert := lookup(getenv, certVar)
	keyFile, hasKey := lookup(getenv, keyVar)
	switch {
	case !hasCert && !hasKey:
		return nil, nil
	case !hasKey:
		return nil, fmt.Errorf("%s is set but %s is not: set both (HTTPS) or neither (plain HTTP)", certVar, keyVar)
	case !hasCert:
		return nil, fmt.Errorf("%s is set but %s is not: set both (HTTPS) or neither (plain HTTP)", keyVar, certVar)
	}
	files, err := tlsreload.Load(certFile, keyFile)
	if err != nil {
		name := certVar
		var e *tlsreload.Error
		if errors.As(err, &e) && e.KeyFile {
			name = keyVar
		}
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return files, nil
}

// loadPetsDeprecation reads the deprecation instants of GET /v1/pets/{petId}.
// They are cut to whole seconds, which is all the Deprecation and Sunset
// headers can say, so that the 410 starts exactly at the advertised Sunset.
func loadPetsDeprecation(getenv func(string) string) (deprecation, error) {
	var dep deprecation
	var err error
	if dep.at, err = parseInstant(getenv, "PETSTORE_PETS_DEPRECATED", "2026-01-01T00:00:00Z"); err != nil {
		return dep, err
	}
	if dep.sunset, err = parseInstant(getenv, "PETSTORE_PETS_SUNSET", "2027-01-01T00:00:00Z"); err != nil {
		return dep, err
	}
	if dep.sunset.Before(dep.at) {
		return dep, fmt.Errorf("PETSTORE_PETS_SUNSET (%s) must not be before PETSTORE_PETS_DEPRECATED (%s)",
			dep.sunset.Format(time.RFC3339), dep.at.Format(time.RFC3339))
	}
	return dep, nil
}

// parseMaxConns reads PETSTORE_MAX_CONNS (docs/api.md, "Limits").
func parseMaxConns(getenv func(string) string) (int, error) {
	v := getenvOr(getenv, "PETSTORE_MAX_CONNS", "10000")
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		return 0, fmt.Errorf("PETSTORE_MAX_CONNS: %q is not a positive whole number of connections such as 10000", textcut.Truncate(v, 40))
	}
	return n, nil
}

func getenvOr(getenv func(string) string, name, fallback string) string {
	if v, set := lookup(getenv, name); set {
		return v
	}
	return fallback
}

// lookup treats an empty variable as unset.
func lookup(getenv func(string) string, name string) (string, bool) {
	v := strings.TrimSpace(getenv(name))
	return v, v != ""
}

func parseInstant(getenv func(string) string, name, fallback string) (time.Time, error) {
	v := getenvOr(getenv, name, fallback)
	t, err := time.Parse(time.RFC3339, v)
	if err != nil {
		return t, fmt.Errorf("%s: %q is not an RFC 3339 instant such as %s", name, v, fallback)
	}
	return t.Truncate(time.Second), nil
}

// defaultFilePoll is how often the key file and the TLS pair are looked at
// for changes (internal/filewatch), and how long a change must have stayed
// unchanged before a look to be loaded at that look: a finished change is
// in force within about three polls (docs/operations.md, "Key rotation").
// PETSTORE_FILE_POLL sets another, of minFilePoll or more: a shorter one
// would keep a CPU busy looking at files.
const (
	defaultFilePoll = 2 * time.Second
	minFilePoll     = 10 * time.Millisecond
)

// loadFilePoll reads PETSTORE_FILE_POLL.
func loadFilePoll(getenv func(string) string) (time.Duration, error) {
	v, set := lookup(getenv, "PETSTORE_FILE_POLL")
	if !set {
		return defaultFilePoll, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < minFilePoll {
		return 0, fmt.Errorf("PETSTORE_FILE_POLL: %q is not a Go duration of %v or more, such as 2s", textcut.Truncate(v, 40), minFilePoll)
	}
	return d, nil
}

// checkDataPath refuses a PETSTORE_DATA that looks like a mistyped URL or
// :memory: rather than a file name: taken for one, it would quietly start
// an empty journal (and its directories) where nobody looks for it.
func checkDataPath(data string) error {
	const want = "a journal file, :memory: or etcd://HOST:PORT[,HOST:PORT…][/PREFIX] (etcds:// for TLS)"
	if store.IsEtcdURL(data) || data == memoryPath {
		return nil
	}
	shown := textcut.Truncate(withoutUserinfo(data), 80) // a mistyped URL may carry a password
	if strings.Contains(data, "://") {
		scheme, _, _ := strings.Cut(shown, "://")
		return fmt.Errorf("PETSTORE_DATA: %q is a URL of scheme %q, which petstore does not speak; want %s", shown, textcut.Truncate(scheme, 40), want)
	}
	if strings.HasPrefix(data, "etcd:") || strings.HasPrefix(data, "etcds:") {
		return fmt.Errorf("PETSTORE_DATA: %q lacks the // of an etcd URL; want %s", shown, want)
	}
	if strings.HasPrefix(data, ":") {
		return fmt.Errorf("PETSTORE_DATA: %q is not :memory: (a file name starting with : is taken for a typo); want %s", shown, want)
	}
	return nil
}

// withoutUserinfo returns data, a URL or something like one, without the
// user:password@ before its host, so that an error can quote the rest
// without showing a password.
func withoutUserinfo(data string) string {
	scheme, rest, ok := strings.Cut(data, ":")
	if !ok {
		return data
	}
	// However many slashes a typo has: etcd:/user:pw@host too.
	trimmed := strings.TrimLeft(rest, "/")
	slashes := rest[:len(rest)-len(trimmed)]
	rest = trimmed
	authority := rest
	if end := strings.IndexAny(rest, "/?#"); end >= 0 {
		authority = rest[:end]
	}
	at := strings.LastIndex(authority, "@")
	if at < 0 {
		return data
	}
	return scheme + ":" + slashes + rest[at+1:]
}

// loadEtcdConfig reads etcd://HOST:PORT[,HOST:PORT…][/PREFIX] (etcds:// for
// TLS) and the PETSTORE_ETCD_* variables. The password comes from a file
// only: never from the environment or the URL, which ps and logs show.
func loadEtcdConfig(getenv func(string) string, data string) (store.EtcdConfig, error) {
	cfg, err := store.ParseEtcdURL(data)
	if err != nil {
		return cfg, fmt.Errorf("PETSTORE_DATA: %w", err)
	}
	scheme, _, _ := strings.Cut(data, "://")
	if scheme == "etcds" {
		cfg.CAFile, _ = lookup(getenv, "PETSTORE_ETCD_CA_FILE")
	} else if _, set := lookup(getenv, "PETSTORE_ETCD_CA_FILE"); set {
		return cfg, errors.New("PETSTORE_ETCD_CA_FILE is set but PETSTORE_DATA is etcd://, not etcds:// (TLS)")
	}
	user, hasUser := lookup(getenv, "PETSTORE_ETCD_USER")
	passwordFile, hasPassword := lookup(getenv, "PETSTORE_ETCD_PASSWORD_FILE")
	switch {
	case hasUser && !hasPassword:
		return cfg, errors.New("PETSTORE_ETCD_USER is set but PETSTORE_ETCD_PASSWORD_FILE is not (the password is read from a file only)")
	case hasPassword && !hasUser:
		return cfg, errors.New("PETSTORE_ETCD_PASSWORD_FILE is set but PETSTORE_ETCD_USER is not")
	case hasUser:
		pw, err := filewatch.ReadFile(passwordFile)
		if err != nil {
			return cfg, fmt.Errorf("PETSTORE_ETCD_PASSWORD_FILE: %w", err)
		}
		cfg.User, cfg.Password = user, strings.TrimRight(string(pw), "\r\n")
		if cfg.Password == "" {
			return cfg, fmt.Errorf("PETSTORE_ETCD_PASSWORD_FILE: %s is empty", passwordFile)
		}
	}
	if v, set := lookup(getenv, "PETSTORE_ETCD_START_TIMEOUT"); set {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return cfg, fmt.Errorf("PETSTORE_ETCD_START_TIMEOUT: %q is not a positive Go duration such as 30s", v)
		}
		cfg.StartTimeout = d
	}
	return cfg, nil
}
