package main

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"petstore/internal/apikey"
	"petstore/internal/cors"
	"petstore/internal/envconf"
	"petstore/internal/filewatch"
	"petstore/internal/ratelimit"
	"petstore/internal/store"
	"petstore/internal/tlsreload"
)

// configVars lists every variable petstore reads, in the order -h prints
// them (see writeUsage), with the default an unset one stands for: the
// one list, which loadConfig reads through and tests hold README.md and
// docs/operations.md to.
var configVars = []envconf.Var{
	{Name: "PETSTORE_ADDR", Default: ":8080", Help: "listen address, HOST:PORT or :PORT"},
	{Name: "PETSTORE_CORS_ORIGINS", Help: "origins whose pages may call the API, comma-separated\n(https://app.example.com), or *; unset: none"},
	{Name: "PETSTORE_API_KEYS", Help: "comma-separated accepted API keys; with no key\nconfigured, a random key is generated and printed once"},
	{Name: "PETSTORE_API_KEYS_FILE", Help: "file with one key per line (# comments allowed),\nread again on SIGHUP and when it changes\nA key of either may be limited to scopes, read,\nwrite (implies read) and metrics: KEY:read,\nKEY:write+metrics; without them it has all three"},
	{Name: "PETSTORE_DATA", Default: "petstore.jsonl", Help: "journal file, :memory: or etcd://…"},
	{Name: "PETSTORE_MAX_CONNS", Default: "10000", Help: "open connections at most"},
	{Name: "PETSTORE_MAX_CATEGORIES", Default: "1000000", Help: "categories the catalogue holds at most, across an\netcd cluster too"},
	{Name: "PETSTORE_PETS_DEPRECATED", Default: "2026-01-01T00:00:00Z", Help: "RFC 3339 instant at which GET /v1/pets/{petId}\nwas deprecated"},
	{Name: "PETSTORE_PETS_SUNSET", Default: "2027-01-01T00:00:00Z", Help: "RFC 3339 instant of its sunset"},
	{Name: "PETSTORE_RATE_LIMIT", Help: "requests per API key: N/s or N/m[,burst=B]; unset: off"},
	{Name: "PETSTORE_IDEMPOTENCY_TTL", Default: "24h", Help: "how long an Idempotency-Key is kept"},
	{Name: "PETSTORE_SHUTDOWN_DELAY", Default: "0s", Help: "on SIGTERM, how long /readyz answers 503 while\neverything else is still served"},
	{Name: "PETSTORE_SHUTDOWN_GRACE", Default: "10s", Help: "then, how long the requests in flight get to finish\nbefore their connections are closed"},
	{Name: "PETSTORE_TLS_CERT_FILE", Help: "PEM certificate: serve HTTPS only (TLS 1.2+, HTTP/2\nand HTTP/1.1); read again on SIGHUP and when it changes"},
	{Name: "PETSTORE_TLS_KEY_FILE", Help: "PEM key of that certificate (both or neither)"},
	{Name: "PETSTORE_FILE_POLL", Default: "2s", Help: "how often the key file and the TLS pair are looked\nat for changes, and how long a change must stay\nunchanged before it is loaded; 10ms or more"},
	{Name: "GOMAXPROCS", Help: "when set, left alone; when not, and it comes to 1,\na journal store raises it to 2 while it writes"},
	{Name: "GOGC", Help: "when set, left alone; when not, the heap may grow\nto 32 MiB before a collection, and to twice what\nthe last one left (Go's 100) from 16 MiB live"},
	{Name: "PETSTORE_ETCD_CA_FILE", Help: "CA certificates for etcds://; unset: the system roots", Group: etcdVars},
	{Name: "PETSTORE_ETCD_USER", Help: "etcd user, when etcd auth is on", Group: etcdVars},
	{Name: "PETSTORE_ETCD_PASSWORD_FILE", Help: "file holding that user's password", Group: etcdVars},
	{Name: "PETSTORE_ETCD_START_TIMEOUT", Default: "30s", Help: "how long start waits for the cluster", Group: etcdVars},
}

const etcdVars = `With PETSTORE_DATA=etcd://HOST:PORT[,HOST:PORT...][/PREFIX] (etcds:// for TLS)
the categories live in an etcd cluster, shared by any number of petstores:`

// minFilePoll is the shortest PETSTORE_FILE_POLL: a shorter one would keep
// a CPU busy looking at files.
const minFilePoll = 10 * time.Millisecond

// warnUnknownVars logs a warning for each PETSTORE_ variable of environ
// that petstore does not read, with the name it is likely a misspelling
// of, and returns their names; never a value. Kubernetes' service links of
// a Service named petstore, and inside Kubernetes of petstore-… too, are
// not petstore's to read and are passed over.
func warnUnknownVars(environ []string, getenv func(string) string, log *slog.Logger) []string {
	links := isServiceLink
	if getenv("KUBERNETES_SERVICE_HOST") != "" {
		links = isAnyServiceLink
	}
	var names []string
	for _, u := range envconf.Unknowns(environ, "PETSTORE_", configVars, links) {
		names = append(names, u.Name)
		msg := u.Name + " is not a variable petstore reads; it is ignored"
		if u.Nearest != "" {
			msg += ". Did you mean " + u.Nearest + "?"
		}
		log.Warn(msg, "variable", u.Name, "nearest", u.Nearest)
	}
	return names
}

// isServiceLink tells Kubernetes' variables of a Service petstore
// (PETSTORE_SERVICE_HOST …); isAnyServiceLink those of petstore-… too
// (PETSTORE_ETCD_PORT_2379_TCP …), passed over only inside Kubernetes, so
// that PETSTORE_HTTP_PORT elsewhere is named.
var (
	isServiceLink    = envconf.ServiceLinks("PETSTORE", false)
	isAnyServiceLink = envconf.ServiceLinks("PETSTORE", true)
)

// unknownVarsAttr is the listening line's list of unknown variables, or
// nothing when there are none.
func unknownVarsAttr(names []string) slog.Attr {
	if len(names) == 0 {
		return slog.Attr{}
	}
	return slog.Any("unknown_variables", names)
}

// newEnv reads configVars through getenv.
func newEnv(getenv func(string) string) *envconf.Reader { return envconf.NewReader(getenv, configVars) }

// config is the service's configuration, read from the environment
// (configVars; README.md, "Configuration"; docs/operations.md, "Starting").
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
	grace        time.Duration    // PETSTORE_SHUTDOWN_GRACE: then, for the requests in flight
	filePoll     time.Duration    // PETSTORE_FILE_POLL: how often the key file and TLS pair are looked at, and how long a change must stay put
	tls          *tlsreload.Files // the TLS certificate and key; nil: plain HTTP
	unknownVars  []string         // PETSTORE_ variables of the environment petstore does not read
}

// loadConfig reads the configuration through getenv. Every error names the
// variable at fault and never quotes a key.
func loadConfig(getenv func(string) string) (config, error) {
	env := newEnv(getenv)
	var cfg config
	var err error
	if cfg.addr, err = env.Address("PETSTORE_ADDR"); err != nil {
		return cfg, err
	}
	if cfg.dataPath, err = loadDataPath(env); err != nil {
		return cfg, err
	}
	if store.IsEtcdURL(cfg.dataPath) {
		if cfg.etcd, err = loadEtcdConfig(getenv, cfg.dataPath); err != nil {
			return cfg, err
		}
	}
	if cfg.pets, err = loadPetsDeprecation(getenv); err != nil {
		return cfg, err
	}
	if err := loadClientCaps(env, &cfg); err != nil {
		return cfg, err
	}
	if err := loadKeys(env, &cfg); err != nil {
		return cfg, err
	}
	if cfg.tls, err = loadTLSFiles(env); err != nil {
		return cfg, err
	}
	if cfg.drainDelay, err = env.Duration("PETSTORE_SHUTDOWN_DELAY", 0); err != nil {
		return cfg, err
	}
	if cfg.grace, err = env.Duration("PETSTORE_SHUTDOWN_GRACE", 0); err != nil {
		return cfg, err
	}
	cfg.filePoll, err = env.Duration("PETSTORE_FILE_POLL", minFilePoll)
	return cfg, err
}

// loadClientCaps reads into cfg what bounds what clients may do: the
// origins of pages, the rate limit, the Idempotency-Key lifetime, and the
// caps on connections and categories.
func loadClientCaps(env *envconf.Reader, cfg *config) error {
	var err error
	if cfg.cors, err = cors.Parse(env.String("PETSTORE_CORS_ORIGINS")); err != nil {
		return fmt.Errorf("PETSTORE_CORS_ORIGINS: %w", err)
	}
	if v, set := env.Lookup("PETSTORE_RATE_LIMIT"); set {
		rl, err := ratelimit.Parse(v)
		if err != nil {
			return fmt.Errorf("PETSTORE_RATE_LIMIT: %w", err)
		}
		cfg.rateLimit = &rl
	}
	if cfg.idemTTL, err = env.Duration("PETSTORE_IDEMPOTENCY_TTL", 1); err != nil {
		return err
	}
	maxConns, err := env.Count("PETSTORE_MAX_CONNS")
	cfg.maxConns = int(maxConns)
	if err != nil {
		return err
	}
	cfg.maxCats, err = env.Count("PETSTORE_MAX_CATEGORIES")
	return err
}

// loadKeys reads the accepted API keys into cfg: those of PETSTORE_API_KEYS
// and of PETSTORE_API_KEYS_FILE, or with neither, one generated key.
func loadKeys(env *envconf.Reader, cfg *config) error {
	if v, set := env.Lookup("PETSTORE_API_KEYS"); set {
		keys, err := apikey.ParseList("PETSTORE_API_KEYS", v)
		if err != nil {
			return err
		}
		cfg.envKeys = keys
		cfg.keys = append(cfg.keys, keys...)
	}
	if path, set := env.Lookup("PETSTORE_API_KEYS_FILE"); set {
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
func loadTLSFiles(env *envconf.Reader) (*tlsreload.Files, error) {
	certFile, hasCert := env.Lookup(certVar)
	keyFile, hasKey := env.Lookup(keyVar)
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
	env := newEnv(getenv)
	var dep deprecation
	var err error
	if dep.at, err = env.Instant("PETSTORE_PETS_DEPRECATED"); err != nil {
		return dep, err
	}
	if dep.sunset, err = env.Instant("PETSTORE_PETS_SUNSET"); err != nil {
		return dep, err
	}
	dep.at, dep.sunset = dep.at.Truncate(time.Second), dep.sunset.Truncate(time.Second)
	if dep.sunset.Before(dep.at) {
		return dep, fmt.Errorf("PETSTORE_PETS_SUNSET (%s) must not be before PETSTORE_PETS_DEPRECATED (%s)",
			dep.sunset.Format(time.RFC3339), dep.at.Format(time.RFC3339))
	}
	return dep, nil
}

// loadDataPath reads PETSTORE_DATA, refusing one that looks like a typo
// (see store.CheckDataPath).
func loadDataPath(env *envconf.Reader) (string, error) {
	data := env.String("PETSTORE_DATA")
	if err := store.CheckDataPath(data); err != nil {
		return "", fmt.Errorf("PETSTORE_DATA: %w", err)
	}
	return data, nil
}

// loadEtcdConfig reads etcd://HOST:PORT[,HOST:PORT…][/PREFIX] (etcds:// for
// TLS) and the PETSTORE_ETCD_* variables. The password comes from a file
// only: never from the environment or the URL, which ps and logs show.
func loadEtcdConfig(getenv func(string) string, data string) (store.EtcdConfig, error) {
	env := newEnv(getenv)
	cfg, err := store.ParseEtcdURL(data)
	if err != nil {
		return cfg, fmt.Errorf("PETSTORE_DATA: %w", err)
	}
	caFile, hasCA := env.Lookup("PETSTORE_ETCD_CA_FILE")
	if hasCA && !strings.HasPrefix(data, "etcds://") {
		return cfg, errors.New("PETSTORE_ETCD_CA_FILE is set but PETSTORE_DATA is etcd://, not etcds:// (TLS)")
	}
	cfg.CAFile = caFile
	user, hasUser := env.Lookup("PETSTORE_ETCD_USER")
	passwordFile, hasPassword := env.Lookup("PETSTORE_ETCD_PASSWORD_FILE")
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
	cfg.StartTimeout, err = env.Duration("PETSTORE_ETCD_START_TIMEOUT", 1)
	return cfg, err
}
