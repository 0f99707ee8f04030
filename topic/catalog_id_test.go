package topic

import (
	"errors"
	"path/filepath"
	"testing"
)

// TestCatalogCreateWithID: a replica's topic keeps the id the cluster
// chose, across a reopen; the zero id and a taken name are refused.
func TestCatalogCreateWithID(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	c := openCatalog(t, dir, nil)
	id := NewID()
	in, err := c.CreateWithID("orders", id, Config{Partitions: 2})
	if err != nil || in.ID != id || in.Internal || in.Config.Partitions != 2 {
		t.Fatalf("created %+v, %v", in, err)
	}
	if in, err := c.CreateWithID("__consumer_offsets", NewID(), Config{Partitions: 1}); err != nil || !in.Internal {
		t.Fatalf("internal: %+v, %v", in, err)
	}
	if _, err := c.CreateWithID("orders", NewID(), Config{}); !errors.Is(err, ErrExists) {
		t.Fatalf("taken name: %v", err)
	}
	if _, err := c.CreateWithID("zero", ID{}, Config{}); !errors.Is(err, ErrInvalidConfig) {
		t.Fatalf("zero id: %v", err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	c = openCatalog(t, dir, nil)
	got, err := c.Describe("orders")
	if err != nil || got.ID != id {
		t.Fatalf("after reopen: %+v, %v", got, err)
	}
}
