package main

import (
	"context"
	"fmt"
	"time"
)

// clusterScenarios are the scenarios of 3 etcd members and 3 petstores.
func clusterScenarios() []scenario {
	spread := clusterSetup{order: rotated}
	return []scenario{
		{name: "etcd-leader-kill", short: true, run: clusterRun(spread, leaderKill),
			about: "kill -9 of the etcd leader, started again a few seconds later"},
		{name: "etcd-leader-stop", short: true, run: clusterRun(clusterSetup{order: leaderFirstFor(2), readOnly: []int{2}}, leaderStop),
			about: "SIGSTOP of the etcd leader for 8 s (read-only petstore #2 watches through it), then SIGCONT"},
		{name: "etcd-member-stop", short: true, run: clusterRun(clusterSetup{order: followerFirst, readOnly: []int{2}}, memberStop),
			about: "SIGSTOP for 8 s of the member that carries the most watches (a follower every petstore lists first; #2 read-only), then SIGCONT"},
		{name: "etcd-petstore-stop", short: true, run: clusterRun(spread, petstoreStop),
			about: "SIGSTOP of one petstore for 4 s, then SIGCONT"},
		{name: "etcd-petstore-kill", short: true, run: clusterRun(spread, petstoreKill),
			about: "kill -9 of one petstore, started again 2 s later"},
		{name: "etcd-partition", short: true, run: clusterRun(spread, partition),
			about: "one petstore cut off from every member (its 3 proxies refuse) for 6 s, then healed"},
		{name: "etcd-lost-answers", short: true, run: clusterRun(clusterSetup{order: rotated, readMostly: []int{1, 2}}, lostAnswers),
			about: "petstore #0's proxies forward its requests but drop etcd's answers (watches flow) for 12 s, then healed; creates go mostly to #0, so that its txns go out on a current counter"},
		{name: "etcd-mix", run: clusterRun(spread, mix),
			about: "a random mix of the faults above, chosen by the seed"},
	}
}

// clusterRun starts the cluster, loads it 2 s, runs the fault schedule,
// and heals and checks.
func clusterRun(setup clusterSetup, faults func(context.Context, *clusterRig) error) func(context.Context, *env, *scenarioRun) error {
	return func(ctx context.Context, e *env, s *scenarioRun) error {
		r, err := startCluster(ctx, e, s, setup)
		if err != nil {
			return err
		}
		defer r.close()
		if err := sleepCtx(ctx, 2*time.Second); err != nil {
			return err
		}
		if err := faults(ctx, r); err != nil {
			return err
		}
		return r.finish(ctx)
	}
}

// followerFirst has every petstore list the same follower first, so that
// their watches meet on it.
func followerFirst(leader int) [3][3]int {
	f := (leader + 1) % 3
	o := [3]int{f, (f + 1) % 3, (f + 2) % 3}
	return [3][3]int{o, o, o}
}

// leaderFirstFor has petstore i list the leader first, the others
// rotated.
func leaderFirstFor(i int) func(int) [3][3]int {
	return func(leader int) [3][3]int {
		o := rotated(leader)
		o[i] = [3]int{leader, (leader + 1) % 3, (leader + 2) % 3}
		return o
	}
}

func leaderKill(ctx context.Context, r *clusterRig) error {
	for range r.e.cfg.cycles {
		l, err := r.leader(ctx)
		if err != nil {
			return err
		}
		r.killMember(l, " (the leader)")
		if err := sleepCtx(ctx, 4*time.Second); err != nil {
			return err
		}
		if err := r.restartMember(ctx, l); err != nil {
			return err
		}
		if err := sleepCtx(ctx, 2*time.Second); err != nil {
			return err
		}
	}
	return nil
}

func leaderStop(ctx context.Context, r *clusterRig) error {
	l, err := r.leader(ctx)
	if err != nil {
		return err
	}
	w := r.watchesOn(l)
	r.freezeMember(l, fmt.Sprintf(" (the leader; watches of petstores %v on it)", w))
	if err := sleepCtx(ctx, 8*time.Second); err != nil {
		return err
	}
	r.thawMember(l)
	return nil
}

// memberStop freezes the member with the most watches on it: a watch on
// a frozen member is silent, and the instance must notice and move.
func memberStop(ctx context.Context, r *clusterRig) error {
	m, w := 0, r.watchesOn(0)
	for k := 1; k < 3; k++ {
		if kw := r.watchesOn(k); len(kw) > len(w) {
			m, w = k, kw
		}
	}
	l, _ := r.leader(ctx)
	role := "a follower"
	if l == m {
		role = "the leader"
	}
	r.freezeMember(m, fmt.Sprintf(" (%s; watches of petstores %v on it)", role, w))
	r.s.expect("fault: the frozen member carried a watch", len(w) > 0,
		"m%d carried the watches of petstores %v", m+1, w)
	if err := sleepCtx(ctx, 8*time.Second); err != nil {
		return err
	}
	r.thawMember(m)
	return nil
}

func petstoreStop(ctx context.Context, r *clusterRig) error {
	i := r.s.rng.IntN(3)
	r.freezeInst(i)
	if err := sleepCtx(ctx, 4*time.Second); err != nil {
		return err
	}
	r.thawInst(i)
	return nil
}

func petstoreKill(ctx context.Context, r *clusterRig) error {
	i := r.s.rng.IntN(3)
	r.killInst(i)
	if err := sleepCtx(ctx, 2*time.Second); err != nil {
		return err
	}
	return r.restartInst(ctx, i)
}

func partition(ctx context.Context, r *clusterRig) error {
	i := r.s.rng.IntN(3)
	if err := r.setModes(i, modeRefuse, 0, 1, 2); err != nil {
		return err
	}
	if err := sleepCtx(ctx, 6*time.Second); err != nil {
		return err
	}
	return r.setModes(i, modePass, 0, 1, 2)
}

// lostAnswers makes petstore #0's txns apply while their answers are lost:
// such a create must be settled (through the watch, which still flows)
// or answered outcome_unknown, never with a definite failure.
func lostAnswers(ctx context.Context, r *clusterRig) error {
	if err := r.setModes(0, modeLoseAnswers, 0, 1, 2); err != nil {
		return err
	}
	err := sleepCtx(ctx, 12*time.Second)
	var dropped int64
	watches := 0
	for m := range 3 {
		dropped += r.proxies[0][m].dropped.Load()
		watches += r.proxies[0][m].watches()
	}
	if err != nil {
		return err
	}
	r.s.expect("fault: etcd's answers to petstore #0 were dropped", dropped > 0,
		"%d bytes of answers dropped; %d watch connection(s) of #0 still open and flowing at the heal", dropped, watches)
	return r.setModes(0, modePass, 0, 1, 2)
}

// mix applies random faults, each held 2–6 s and healed, until twice the
// scenario's duration has passed.
func mix(ctx context.Context, r *clusterRig) error {
	until := r.began + 2*int64(r.e.cfg.duration)
	for first := true; first || r.e.clock.now() < until; first = false {
		if err := r.randomFault(ctx); err != nil {
			return err
		}
		if err := sleepCtx(ctx, time.Duration(2000+r.s.rng.IntN(4000))*time.Millisecond); err != nil {
			return err
		}
		if err := r.healAll(ctx); err != nil {
			return err
		}
		if err := sleepCtx(ctx, time.Duration(1000+r.s.rng.IntN(1000))*time.Millisecond); err != nil {
			return err
		}
	}
	return nil
}

// randomFault makes one fault of the mix; healAll undoes it.
func (r *clusterRig) randomFault(ctx context.Context) error {
	rng := r.s.rng
	i, m := rng.IntN(3), rng.IntN(3)
	switch rng.IntN(9) {
	case 0:
		l, err := r.leader(ctx)
		if err != nil {
			return err
		}
		r.killMember(l, " (the leader)")
	case 1:
		r.killMember(m, "")
	case 2:
		l, err := r.leader(ctx)
		if err != nil {
			return err
		}
		r.freezeMember(l, " (the leader)")
	case 3:
		r.freezeMember(m, fmt.Sprintf(" (watches of petstores %v on it)", r.watchesOn(m)))
	case 4:
		r.freezeInst(i)
	case 5:
		r.killInst(i)
	case 6:
		return r.setModes(i, modeRefuse, 0, 1, 2)
	case 7:
		return r.setModes(i, modeBlackhole, 0, 1, 2)
	default:
		return r.setModes(i, modeLoseAnswers, 0, 1, 2)
	}
	return nil
}
