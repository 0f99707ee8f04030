package folio

import (
	"runtime"
	"testing"
	"time"
)

// waitParked returns once n readers wait on partition p of topicName of b
// (log.Log.Waiters: a Poll, a Wait): the proof, without a sleep, that a
// reader parked before the test acts on it.
func waitParked(t testing.TB, b *Broker, topicName string, p int32, n int) {
	t.Helper()
	l, err := partLog(b, topicName, p)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for l.Waiters() < n {
		if time.Now().After(deadline) {
			t.Fatalf("%d readers wait on %s-%d, want %d", l.Waiters(), topicName, p, n)
		}
		runtime.Gosched()
	}
}
