package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"time"
)

// journalScenarios are the scenarios of one petstore on a journal file in
// the scenario's directory, with disk errors injected by strace.
func journalScenarios() []scenario {
	return []scenario{
		{name: "journal-fdatasync-eio", short: true, run: runJournalSyncEIO,
			about: "fdatasync fails (EIO) under load, the undo succeeds: the batch fails definitely, later creates are refused until a restart"},
		{name: "journal-double-fault", short: true, run: runJournalDoubleFault,
			about: "fdatasync fails (EIO) and so does the undo's ftruncate: the batch's outcome is unknown, and what a restart brings back must not have been denied"},
		{name: "journal-enospc", short: true, run: runJournalENOSPC,
			about: "pwrite64 fails with ENOSPC a few times: definite failures, and the journal takes creates again afterwards"},
		{name: "journal-tmpfs-full", short: true, run: runJournalTmpfsFull,
			about: "the journal on a small tmpfs that fills up (real ENOSPC), then gets room again; skipped where mounting is not allowed"},
		{name: "journal-kill9", short: true, run: runJournalKill9,
			about: "kill -9 of petstore under load (group commits in flight), restarted on the same journal, repeatedly"},
	}
}

// journalRig is one petstore on a journal with the scenario's clients.
type journalRig struct {
	e     *env
	s     *scenarioRun
	st    *instance
	began int64
	halt  func()
}

// startJournal starts petstore on the journal path (in the scenario's
// directory when empty) and the clients.
func startJournal(ctx context.Context, e *env, s *scenarioRun, path string) (*journalRig, error) {
	if path == "" {
		path = filepath.Join(s.dir, "petstore.jsonl")
	}
	st, err := newInstance(e.procs, e.cfg.bin, s.dir, 0, e.key, path)
	if err != nil {
		return nil, err
	}
	if err := st.start(ctx); err != nil {
		return nil, err
	}
	r := &journalRig{e: e, s: s, st: st, began: e.clock.now()}
	w := newWorkload([]string{st.url()}, e.key, s.rec, e.clock, nil, nil)
	r.halt = w.start(ctx, e.cfg.clients, s.seed)
	return r, nil
}

// stopLoad stops the clients (once).
func (r *journalRig) stopLoad() {
	if r.halt != nil {
		r.halt()
		r.halt = nil
	}
}

func (r *journalRig) close() {
	r.stopLoad()
	r.st.kill()
}

// finish stops the clients, restarts petstore cleanly on the same journal
// and takes the final state from its list.
func (r *journalRig) finish(ctx context.Context) error {
	r.stopLoad()
	r.s.tl.note("petstore stopped (SIGTERM), started again on the same journal")
	r.st.stop()
	r.s.in.Restarts = append(r.s.in.Restarts, r.e.clock.now())
	if err := r.st.start(ctx); err != nil {
		return err
	}
	final, err := fetchList(ctx, r.e, r.st.url(), 15*time.Second)
	if err != nil {
		return err
	}
	// One instance: every list must hold every create answered 201
	// before it began.
	r.s.in.Final, r.s.in.Bound, r.s.in.Grace = final, 0, 0
	return nil
}

// warmup is the load before a journal fault: the run's duration less
// what the fault itself takes, at least 2 s.
func (r *journalRig) warmup(ctx context.Context, faultTakes time.Duration) error {
	return sleepCtx(ctx, max(2*time.Second, r.e.cfg.duration-faultTakes))
}

func runJournalSyncEIO(ctx context.Context, e *env, s *scenarioRun) error {
	return journalSyncFault(ctx, e, s, []string{"fdatasync"})
}

func runJournalDoubleFault(ctx context.Context, e *env, s *scenarioRun) error {
	return journalSyncFault(ctx, e, s, []string{"fdatasync", "ftruncate"})
}

// journalSyncFault fails every call of the syscalls fail with EIO from a
// moment under load on, then restarts petstore without strace.
func journalSyncFault(ctx context.Context, e *env, s *scenarioRun, fail []string) error {
	r, err := startJournal(ctx, e, s, "")
	if err != nil {
		return err
	}
	defer r.close()
	if err := r.warmup(ctx, 5*time.Second); err != nil {
		return err
	}
	var injects []string
	for _, sc := range fail {
		injects = append(injects, sc+":error=EIO")
	}
	s.in.SyncFaultFrom = e.clock.now()
	s.tl.note("strace attaches: every " + strings.Join(fail, " and every ") + " fails with EIO")
	tr, err := attachStrace(ctx, e, s.dir, r.st.pid(), fail, injects)
	if err != nil {
		return err
	}
	s.note("strace attached to all %d threads of petstore", tr.threads)
	err = sleepCtx(ctx, 4*time.Second)
	ready := statusOf(ctx, e, r.st.url()+"/readyz")
	r.stopLoad()
	tr.detach()
	s.tl.note("clients stopped; strace detached")
	if err != nil {
		return err
	}
	got := tr.injected()
	for _, sc := range fail {
		s.expect("fault: "+sc+" failed", got[sc] > 0, "%s failed %d time(s) by injection", sc, got[sc])
	}
	s.expect("readyz: /readyz answers 503 after the failed sync", ready == 503, "GET /readyz answered %d", ready)
	if err := r.finish(ctx); err != nil {
		return err
	}
	syncFaultAnswers(s, len(fail) > 1)
	return nil
}

// syncFaultAnswers checks what the creates were told once a sync failed
// (docs: "Telling the truth under faults"): the batch whose sync failed
// answers outcome_unknown exactly when its undo failed too, and every
// create sent after it is refused with 503 unavailable until a restart.
func syncFaultAnswers(s *scenarioRun, undoFailed bool) {
	first, unknown := int64(-1), 0
	for _, op := range s.rec.history() {
		if op.Kind != opCreate || op.End < s.in.SyncFaultFrom || op.Status < 500 {
			continue
		}
		if first < 0 || op.End < first {
			first = op.End
		}
		if op.Code == "outcome_unknown" {
			unknown++
		}
	}
	if undoFailed {
		s.expect("batch-unknown: the batch whose undo failed answered outcome_unknown", unknown > 0,
			"%d create(s) answered 503 outcome_unknown after the fault", unknown)
	} else {
		s.expect("batch-definite: the batch whose undo succeeded answered definite failures", unknown == 0,
			"%d create(s) answered 503 outcome_unknown after the fault", unknown)
	}
	if first < 0 {
		return
	}
	refused, other := 0, map[string]int{}
	for _, op := range s.rec.history() {
		if op.Kind != opCreate || op.Start <= first || op.Status < 500 {
			continue
		}
		if op.Code == "unavailable" {
			refused++
		} else {
			other[fmt.Sprintf("%d %s", op.Status, op.Code)]++
		}
	}
	s.expect("refused-503: creates after the failed sync are refused with 503 unavailable", len(other) == 0,
		"%d refused with 503 unavailable; other 5xx answers: %v", refused, other)
}

func runJournalENOSPC(ctx context.Context, e *env, s *scenarioRun) error {
	r, err := startJournal(ctx, e, s, "")
	if err != nil {
		return err
	}
	defer r.close()
	if err := r.warmup(ctx, 5*time.Second); err != nil {
		return err
	}
	s.tl.note("strace attaches: the first 3 pwrite64 of each thread fail with ENOSPC")
	tr, err := attachStrace(ctx, e, s.dir, r.st.pid(), []string{"pwrite64"}, []string{"pwrite64:error=ENOSPC:when=1..3"})
	if err != nil {
		return err
	}
	s.note("strace attached to all %d threads of petstore", tr.threads)
	err = sleepCtx(ctx, 1500*time.Millisecond)
	tr.detach()
	healed := e.clock.now()
	s.tl.note("strace detached")
	if err == nil {
		err = sleepCtx(ctx, 3*time.Second)
	}
	r.stopLoad()
	if err != nil {
		return err
	}
	got := tr.injected()["pwrite64"]
	s.expect("fault: pwrite64 failed", got > 0, "pwrite64 failed %d time(s) by injection", got)
	after := 0
	for _, op := range s.rec.history() {
		if op.Kind == opCreate && op.Start > healed && op.Outcome == outcomeCreated && !op.Replayed {
			after++
		}
	}
	s.expect("recovers: the journal takes creates again after ENOSPC", after > 0, "%d creates answered 201 after strace detached", after)
	return r.finish(ctx)
}

func runJournalKill9(ctx context.Context, e *env, s *scenarioRun) error {
	r, err := startJournal(ctx, e, s, "")
	if err != nil {
		return err
	}
	defer r.close()
	if err := sleepCtx(ctx, 2*time.Second); err != nil {
		return err
	}
	for k := range e.cfg.kills {
		if err := sleepCtx(ctx, time.Duration(800+s.rng.IntN(1200))*time.Millisecond); err != nil {
			return err
		}
		s.tl.note(fmt.Sprintf("kill -9 petstore (%d of %d)", k+1, e.cfg.kills))
		r.st.kill()
		s.in.Restarts = append(s.in.Restarts, e.clock.now())
		if err := r.st.start(ctx); err != nil {
			return err
		}
		s.tl.note("petstore started again")
	}
	if err := sleepCtx(ctx, 2*time.Second); err != nil {
		return err
	}
	r.stopLoad()
	inFlight := 0
	for _, op := range s.rec.history() {
		if op.Kind == opCreate && op.Outcome == outcomeUnknown {
			inFlight++
		}
	}
	s.note("%d create attempts got no answer (in flight at a kill, or sent while petstore was down)", inFlight)
	return r.finish(ctx)
}
