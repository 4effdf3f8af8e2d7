package main

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"time"
)

// env is what every scenario of a run shares.
type env struct {
	cfg   config
	procs *procs
	clock clock
	key   string // the API key of the run; never printed or written
	http  *http.Client
}

// scenario is one named fault schedule.
type scenario struct {
	name  string
	short bool // part of the short set
	about string
	run   func(ctx context.Context, e *env, s *scenarioRun) error
}

// scenarioRun is the state of one scenario as it runs: its directory, its
// history, and what the driver learns for the checker and the report.
type scenarioRun struct {
	name    string
	dir     string
	seed    uint64
	rng     *rand.Rand
	rec     *recorder
	tl      *timeline
	in      checkInput
	extra   []propResult
	notes   []string
	skipped string // why the scenario could not run here (it passes)
}

func (s *scenarioRun) note(format string, args ...any) {
	s.notes = append(s.notes, fmt.Sprintf(format, args...))
}

// skip marks the scenario as one this machine cannot run.
func (s *scenarioRun) skip(format string, args ...any) {
	s.skipped = fmt.Sprintf(format, args...)
}

// expect adds a property of the scenario itself, named "tag: what" (did
// its fault happen, did the service answer as the spec says, did it come
// back): a scenario whose fault never bit proves nothing, so it fails
// rather than passes.
func (s *scenarioRun) expect(name string, ok bool, format string, args ...any) {
	p := propResult{Name: name, Checked: 1}
	if ok {
		p.Notes = []string{fmt.Sprintf(format, args...)}
	} else {
		p.fail(format, args...)
	}
	s.extra = append(s.extra, p.done())
}

// scenarioSeed derives a scenario's seed from the run's, so that each
// scenario's choices depend on the run seed and its own name only.
func scenarioSeed(seed int64, name string) uint64 {
	h := fnv.New64a()
	fmt.Fprintf(h, "%d/%s", seed, name)
	return h.Sum64()
}

// runScenario runs sc in its own directory and checks its history.
func runScenario(ctx context.Context, e *env, sc scenario) *outcome {
	began := time.Now()
	o := &outcome{Name: sc.name, About: sc.about}
	s := &scenarioRun{name: sc.name, dir: filepath.Join(e.cfg.out, sc.name), seed: scenarioSeed(e.cfg.seed, sc.name)}
	s.rng = rand.New(rand.NewPCG(s.seed, 0))
	s.tl = newTimeline(e.clock)
	o.Dir = s.dir
	err := os.MkdirAll(s.dir, 0o700)
	if err == nil {
		s.rec, err = newRecorder(filepath.Join(s.dir, "history.jsonl"))
	}
	if err == nil {
		err = sc.run(ctx, e, s)
		if cerr := s.rec.close(); err == nil {
			err = cerr
		}
		s.tl.write(filepath.Join(s.dir, "faults.jsonl"))
	}
	o.Seconds = time.Since(began).Seconds()
	o.Notes, o.Faults, o.Skipped = s.notes, s.tl.log, s.skipped
	if s.rec != nil {
		o.tally(s.rec.history())
	}
	if err != nil {
		o.Err = err.Error()
		return o
	}
	if s.skipped != "" {
		return o
	}
	s.in.Ops = s.rec.history()
	o.Props = append(check(s.in), s.extra...)
	return o
}

// statusOf returns the status of GET url, or 0 if there was no answer.
func statusOf(ctx context.Context, e *env, url string) int {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	resp, err := e.http.Do(req)
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

// fetchList reads GET /v1/categories of base, retrying for up to d.
func fetchList(ctx context.Context, e *env, base string, d time.Duration) ([]category, error) {
	var cats []category
	var last error
	err := poll(ctx, d, 200*time.Millisecond, func() (bool, error) {
		cats, last = getList(ctx, e, base)
		return last == nil, nil
	})
	if err != nil {
		return nil, fmt.Errorf("listing %s: %w (last: %v)", base, err, last)
	}
	return cats, nil
}

func getList(ctx context.Context, e *env, base string) ([]category, error) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/v1/categories", nil)
	req.Header.Set("Authorization", "Bearer "+e.key)
	resp, err := e.http.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 256<<20))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("HTTP %d", resp.StatusCode)
	}
	var cats []category
	if err := json.Unmarshal(b, &cats); err != nil {
		return nil, err
	}
	return cats, nil
}

// converge waits (at most d) until every instance lists the same
// categories, and returns the longest list as the final state, with a
// property that says whether they agreed.
func converge(ctx context.Context, e *env, urls []string, d time.Duration) ([]category, propResult, error) {
	p := propResult{Name: "converged: lists identical on every instance after healing", Checked: len(urls)}
	var lists [][]category
	var last error
	waitErr := poll(ctx, d, 250*time.Millisecond, func() (bool, error) {
		lists, last = nil, nil
		for _, u := range urls {
			cats, err := getList(ctx, e, u)
			if err != nil {
				last = fmt.Errorf("%s: %w", u, err)
				return false, nil
			}
			lists = append(lists, cats)
		}
		for _, l := range lists[1:] {
			if !reflect.DeepEqual(l, lists[0]) {
				return false, nil
			}
		}
		return true, nil
	})
	if ctx.Err() != nil {
		return nil, p, ctx.Err()
	}
	if lists == nil {
		return nil, p, fmt.Errorf("no final state: %w (last: %v)", waitErr, last)
	}
	final := lists[0]
	for _, l := range lists {
		if len(l) > len(final) {
			final = l
		}
	}
	if waitErr != nil {
		for i, l := range lists {
			p.fail("after %v instance #%d lists %d categories (max id %d); the longest list has %d", d, i, len(l), maxID(l), len(final))
		}
	}
	return final, p.done(), nil
}

func maxID(cats []category) int64 {
	var m int64
	for _, c := range cats {
		m = max(m, c.ID)
	}
	return m
}
