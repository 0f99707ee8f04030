package replica

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestSimulatorSessions runs the simulator with the Mem as the
// controller, as the Broker's cluster does: each replica that is up and
// not isolated heartbeats on the virtual clock, and the controller event
// is Mem.ExpireSessions, which fences lapsed replicas and elects. The
// invariants are checked after every event as in TestSimulator; a failing
// seed prints itself (-seed=N replays it with its trace). It runs -seeds
// seeds (-short: at most 50), as TestSimulator.
func TestSimulatorSessions(t *testing.T) {
	run := func(seed uint64, record bool) *sim {
		s := newSim(seed, record)
		s.sessions = true
		for _, n := range s.nodes {
			if err := s.meta.Heartbeat(n.id, n.inc, s.clock()); err != nil {
				t.Fatal(err)
			}
			s.every(simSession/4, fmt.Sprintf("heartbeat %d", n.id), func() {
				if n.up && !n.isolated {
					if err := s.meta.Heartbeat(n.id, n.inc, s.clock()); err != nil {
						s.fail("heartbeat %d: %v", n.id, err)
					}
				}
			})
		}
		if err := s.run(3 * time.Second); err != nil {
			if record {
				t.Fatalf("seed %d: %v\ntrace:\n%s", seed, err, strings.Join(s.trace, "\n"))
			}
			t.Fatalf("seed %d: %v (replay: go test -run 'TestSimulatorSessions$' ./replica -seed=%d)", seed, err, seed)
		}
		return s
	}
	if *flagSeed != 0 {
		t.Logf("seed %d: %s", *flagSeed, run(*flagSeed, true).summary())
		return
	}
	n := *flagSeeds
	if testing.Short() {
		n = min(n, 50)
	}
	var acked, elections int
	for seed := uint64(1); seed <= uint64(n); seed++ {
		s := run(seed, false)
		acked += len(s.acked)
		elections += int(s.metaEpoch)
	}
	if acked == 0 || elections == 0 {
		t.Fatalf("%d acks=all records, %d epochs over %d seeds: the scenario tests nothing", acked, elections, n)
	}
	t.Logf("%d seeds, %d acks=all records acknowledged, %d epochs", n, acked, elections)
}

// sessionController is the simulator's controller under sessions: the
// Mem's pass on the virtual clock.
func (s *sim) sessionController() {
	for _, e := range s.meta.ExpireSessions(s.clock(), simSession) {
		if e.Unclean {
			s.fail("unclean election of %d in epoch %d with unclean election off", e.Leader, e.LeaderEpoch)
		}
	}
}
