package index

import "testing"

// On random entry sets every lookup on a real index file, writable, sealed
// and reopened, agrees with a linear scan of the entries that were
// appended.
func TestOffsetLookupProperty(t *testing.T) {
	r := newRand(t)
	for round := range 12 {
		base := r.Int64N(1 << 40)
		n := r.IntN(4000)
		if round < 3 {
			n = []int{0, 1, 1100}[round]
		}
		var model []OffsetEntry
		path := tempPath(t, "p.index")
		x := openOffset(t, path, base, true, nil)
		off, pos := base+r.Int64N(3), int64(0)
		for range n {
			mustNil(t, "Append", x.Append(off, pos))
			model = append(model, OffsetEntry{off, pos})
			off += 1 + r.Int64N(50)
			pos += r.Int64N(5000) // repeats allowed
		}
		check := func(stage string) {
			t.Helper()
			if x.Entries() != len(model) {
				t.Fatalf("%s: Entries = %d, want %d", stage, x.Entries(), len(model))
			}
			offs := make([]int64, len(model))
			poss := make([]int64, len(model))
			for i, e := range model {
				offs[i], poss[i] = e.Offset, e.Position
			}
			baseEntry := OffsetEntry{Offset: base}
			for _, target := range targetsFor(r, offs) {
				want := baseEntry
				if i := linearFloor(offs, target); i >= 0 {
					want = model[i]
				}
				if got := x.Lookup(target); got != want {
					t.Fatalf("%s: Lookup(%d) = %+v, want %+v", stage, target, got, want)
				}
				want, wantOK := baseEntry, false
				if i := linearCeil(offs, target); i >= 0 {
					want, wantOK = model[i], true
				}
				if got, ok := x.UpperBound(target); got != want || ok != wantOK {
					t.Fatalf("%s: UpperBound(%d) = %+v %v, want %+v %v", stage, target, got, ok, want, wantOK)
				}
			}
			for _, p := range targetsFor(r, poss) {
				want, wantOK := baseEntry, false
				if i := linearCeil(poss, p); i >= 0 {
					want, wantOK = model[i], true
				}
				if got, ok := x.UpperBoundPosition(p); got != want || ok != wantOK {
					t.Fatalf("%s: UpperBoundPosition(%d) = %+v %v, want %+v %v", stage, p, got, ok, want, wantOK)
				}
			}
		}
		check("writable")
		mustNil(t, "Seal", x.Seal())
		check("sealed")
		mustNil(t, "Close", x.Close())
		x = openOffset(t, path, base, false, nil)
		check("reopened")
		if len(model) > 0 {
			cut := model[r.IntN(len(model))].Offset + r.Int64N(2)
			mustNil(t, "TruncateTo", x.TruncateTo(cut))
			for len(model) > 0 && model[len(model)-1].Offset >= cut {
				model = model[:len(model)-1]
			}
			check("truncated")
		}
		mustNil(t, "Close", x.Close())
	}
}

func TestTimeLookupProperty(t *testing.T) {
	r := newRand(t)
	for round := range 12 {
		base := r.Int64N(1 << 40)
		n := r.IntN(3000)
		if round < 3 {
			n = []int{0, 1, 800}[round]
		}
		var model []TimeEntry
		path := tempPath(t, "p.timeindex")
		x := openTime(t, path, base, true, nil)
		ts, off := r.Int64N(1<<41), base
		for range n {
			// Offer timestamps that sometimes do not grow: those are skipped.
			offer := ts + r.Int64N(100) - 30
			mustNil(t, "Append", x.Append(offer, off))
			if len(model) == 0 && offer > NoTimestamp || len(model) > 0 && offer > model[len(model)-1].Timestamp {
				model = append(model, TimeEntry{offer, off})
				ts = offer
			}
			off += r.Int64N(3)
		}
		check := func(stage string) {
			t.Helper()
			if x.Entries() != len(model) {
				t.Fatalf("%s: Entries = %d, want %d", stage, x.Entries(), len(model))
			}
			tss := make([]int64, len(model))
			for i, e := range model {
				tss[i] = e.Timestamp
			}
			none := TimeEntry{Timestamp: NoTimestamp, Offset: base}
			for _, target := range targetsFor(r, tss) {
				want := none
				if i := linearFloor(tss, target); i >= 0 {
					want = model[i]
				}
				if got := x.Lookup(target); got != want {
					t.Fatalf("%s: Lookup(%d) = %+v, want %+v", stage, target, got, want)
				}
				want, wantOK := none, false
				if i := linearCeil(tss, target); i >= 0 {
					want, wantOK = model[i], true
				}
				if got, ok := x.UpperBound(target); got != want || ok != wantOK {
					t.Fatalf("%s: UpperBound(%d) = %+v %v, want %+v %v", stage, target, got, ok, want, wantOK)
				}
			}
		}
		check("writable")
		mustNil(t, "Seal", x.Seal())
		check("sealed")
		mustNil(t, "Close", x.Close())
		x = openTime(t, path, base, true, nil)
		check("reopened writable")
		if len(model) > 0 {
			cut := model[r.IntN(len(model))].Offset + r.Int64N(2)
			mustNil(t, "TruncateTo", x.TruncateTo(cut))
			for len(model) > 0 && model[len(model)-1].Offset >= cut {
				model = model[:len(model)-1]
			}
			check("truncated")
		}
		mustNil(t, "Close", x.Close())
	}
}
