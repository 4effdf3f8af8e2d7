package main

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// clusterRig is a 3-member etcd cluster and 3 petstores on one prefix,
// petstore i reaching member m only through proxy [i][m], with the
// scenario's clients. Its methods make and heal faults, recording each on
// the timeline (a fault before it is made, a heal after).
type clusterRig struct {
	e       *env
	s       *scenarioRun
	etcd    *etcdCluster
	proxies [3][3]*proxy
	inst    [3]*instance
	halt    func()
	began   int64

	memberKilled, memberFrozen [3]bool
	instKilled, instFrozen     [3]bool
	stopMonitor                context.CancelFunc
}

// clusterSetup says how a scenario wants the cluster: the order in which
// each petstore lists the members (it watches and writes through the
// first that answers), and the instances that get few creates or none.
// An instance that creates reads etcd back for its own creates, which
// hides a stale watch: the lag of a watch shows best on one that only
// reads.
type clusterSetup struct {
	order                func(leader int) [3][3]int
	readMostly, readOnly []int
}

// rotated gives petstore i the members from i on: watches spread out.
func rotated(int) [3][3]int { return [3][3]int{{0, 1, 2}, {1, 2, 0}, {2, 0, 1}} }

func startCluster(ctx context.Context, e *env, s *scenarioRun, setup clusterSetup) (*clusterRig, error) {
	r := &clusterRig{e: e, s: s}
	var err error
	if r.etcd, err = startEtcd(ctx, e.procs, s.dir); err != nil {
		return nil, err
	}
	leader, err := r.etcd.leader(ctx, func(int) bool { return true })
	if err != nil {
		r.close()
		return nil, err
	}
	if err := r.startPetstores(ctx, setup.order(leader)); err != nil {
		r.close()
		return nil, err
	}
	mctx, cancel := context.WithCancel(ctx)
	r.stopMonitor = cancel
	go s.tl.monitor(mctx, r.etcd)
	urls := make([]string, 3)
	for i, in := range r.inst {
		urls[i] = in.url()
	}
	w := newWorkload(urls, e.key, s.rec, e.clock, setup.readMostly, setup.readOnly)
	r.began = e.clock.now()
	r.halt = w.start(ctx, e.cfg.clients, s.seed)
	if len(setup.readMostly) > 0 {
		s.note("petstore %v read-mostly: 1 in 20 of the creates meant for it reach it", setup.readMostly)
	}
	if len(setup.readOnly) > 0 {
		s.note("petstore %v read-only: it gets lists and gets, no creates", setup.readOnly)
	}
	return r, nil
}

// startPetstores starts the proxies and the petstores, petstore i listing
// its proxies in the order order[i] gives.
func (r *clusterRig) startPetstores(ctx context.Context, order [3][3]int) error {
	for i := range 3 {
		for m := range 3 {
			p, err := newProxy(i, m, r.etcd.members[m].clientAddr)
			if err != nil {
				return err
			}
			r.proxies[i][m] = p
		}
	}
	for i := range 3 {
		var eps []string
		for _, m := range order[i] {
			eps = append(eps, r.proxies[i][m].addr)
		}
		data := "etcd://" + strings.Join(eps, ",") + "/petstore"
		in, err := newInstance(r.e.procs, r.e.cfg.bin, r.s.dir, i, r.e.key, data)
		if err != nil {
			return err
		}
		r.inst[i] = in
		if err := in.start(ctx); err != nil {
			return err
		}
		r.s.note("petstore #%d at %s lists members %v (m%d first)", i, in.addr, plusOne(order[i]), order[i][0]+1)
	}
	return nil
}

func plusOne(ms [3]int) []int { return []int{ms[0] + 1, ms[1] + 1, ms[2] + 1} }

func (r *clusterRig) stopLoad() {
	if r.halt != nil {
		r.halt()
		r.halt = nil
	}
}

// close stops everything the rig started.
func (r *clusterRig) close() {
	r.stopLoad()
	if r.stopMonitor != nil {
		r.stopMonitor()
	}
	for _, in := range r.inst {
		if in != nil && in.proc != nil {
			in.kill()
		}
	}
	for i := range 3 {
		for m := range 3 {
			if p := r.proxies[i][m]; p != nil {
				p.close()
			}
		}
	}
	if r.etcd != nil {
		r.etcd.close()
	}
}

// up tells whether member m runs, as the schedule has it.
func (r *clusterRig) up(m int) bool { return !r.memberKilled[m] && !r.memberFrozen[m] }

func (r *clusterRig) leader(ctx context.Context) (int, error) { return r.etcd.leader(ctx, r.up) }

func (r *clusterRig) killMember(m int, why string) {
	r.s.tl.fault(fmt.Sprintf("kill -9 etcd m%d%s", m+1, why), func(s *worldState) { s.MemberUp[m] = false })
	r.memberKilled[m] = true
	r.etcd.kill(m)
}

func (r *clusterRig) restartMember(ctx context.Context, m int) error {
	if err := r.etcd.restart(ctx, m); err != nil {
		return err
	}
	r.memberKilled[m] = false
	r.s.tl.heal(fmt.Sprintf("etcd m%d started again and healthy", m+1), func(s *worldState) { s.MemberUp[m] = !r.memberFrozen[m] })
	return nil
}

func (r *clusterRig) freezeMember(m int, why string) {
	r.s.tl.fault(fmt.Sprintf("SIGSTOP etcd m%d%s", m+1, why), func(s *worldState) { s.MemberUp[m] = false })
	r.memberFrozen[m] = true
	r.etcd.freeze(m)
}

func (r *clusterRig) thawMember(m int) {
	r.etcd.thaw(m)
	r.memberFrozen[m] = false
	r.s.tl.heal(fmt.Sprintf("SIGCONT etcd m%d", m+1), func(s *worldState) { s.MemberUp[m] = !r.memberKilled[m] })
}

func (r *clusterRig) freezeInst(i int) {
	r.s.tl.fault(fmt.Sprintf("SIGSTOP petstore #%d", i), func(s *worldState) { s.InstUp[i] = false })
	r.instFrozen[i] = true
	r.inst[i].freeze()
}

func (r *clusterRig) thawInst(i int) {
	r.inst[i].thaw()
	r.instFrozen[i] = false
	r.s.tl.heal(fmt.Sprintf("SIGCONT petstore #%d", i), func(s *worldState) { s.InstUp[i] = !r.instKilled[i] })
}

func (r *clusterRig) killInst(i int) {
	r.s.tl.fault(fmt.Sprintf("kill -9 petstore #%d", i), func(s *worldState) { s.InstUp[i] = false })
	r.instKilled[i] = true
	r.inst[i].kill()
}

func (r *clusterRig) restartInst(ctx context.Context, i int) error {
	if err := r.inst[i].start(ctx); err != nil {
		return err
	}
	r.instKilled[i] = false
	r.s.tl.heal(fmt.Sprintf("petstore #%d started again and serving", i), func(s *worldState) { s.InstUp[i] = !r.instFrozen[i] })
	return nil
}

// setModes sets the proxies from petstore i to members ms to mode.
func (r *clusterRig) setModes(i int, mode proxyMode, ms ...int) error {
	what := fmt.Sprintf("proxies #%d→%v: %v", i, plusOneSlice(ms), mode)
	change := func(s *worldState) {
		for _, m := range ms {
			s.Mode[i][m] = mode
		}
	}
	if mode != modePass {
		r.s.tl.fault(what, change)
	}
	for _, m := range ms {
		if err := r.proxies[i][m].setMode(mode); err != nil {
			return err
		}
	}
	if mode == modePass {
		r.s.tl.heal(what, change)
	}
	return nil
}

func plusOneSlice(ms []int) []int {
	out := make([]int, len(ms))
	for k, m := range ms {
		out[k] = m + 1
	}
	return out
}

// healAll undoes every fault still in force.
func (r *clusterRig) healAll(ctx context.Context) error {
	for m := range 3 {
		if r.memberFrozen[m] {
			r.thawMember(m)
		}
	}
	for m := range 3 {
		if r.memberKilled[m] {
			if err := r.restartMember(ctx, m); err != nil {
				return err
			}
		}
	}
	for i := range 3 {
		for m := range 3 {
			if r.proxies[i][m].currentMode() != modePass {
				if err := r.setModes(i, modePass, m); err != nil {
					return err
				}
			}
		}
		if r.instFrozen[i] {
			r.thawInst(i)
		}
		if r.instKilled[i] {
			if err := r.restartInst(ctx, i); err != nil {
				return err
			}
		}
	}
	return nil
}

// watchesOn returns, for member m, the petstores with an open watch
// connection to it.
func (r *clusterRig) watchesOn(m int) []int {
	var out []int
	for i := range 3 {
		if r.proxies[i][m].watches() > 0 {
			out = append(out, i)
		}
	}
	return out
}

// finish heals, keeps the load on until the scenario's duration is over
// (3 s at least), stops the clients, waits for the instances to agree and
// takes the final state.
func (r *clusterRig) finish(ctx context.Context) error {
	if err := r.healAll(ctx); err != nil {
		return err
	}
	rest := time.Duration(r.began + int64(r.e.cfg.duration) - r.e.clock.now())
	if err := sleepCtx(ctx, max(3*time.Second, rest)); err != nil {
		return err
	}
	r.stopLoad()
	r.s.tl.note("clients stopped")
	urls := []string{r.inst[0].url(), r.inst[1].url(), r.inst[2].url()}
	final, agreed, err := converge(ctx, r.e, urls, 15*time.Second)
	if err != nil {
		return err
	}
	r.s.extra = append(r.s.extra, agreed)
	r.stopMonitor()
	in := &r.s.in
	in.Final = final
	in.Bound, in.Grace = int64(2*time.Second), int64(time.Second)
	in.Unreachable = r.s.tl.unreachable(r.e.clock.now())
	for _, iv := range r.s.tl.leaderless() {
		r.s.note("no etcd leader seen from %s to %s", secs(iv.From), secs(iv.To))
	}
	return nil
}
