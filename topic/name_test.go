package topic

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
)

func TestValidateName(t *testing.T) {
	long := strings.Repeat("a", MaxNameLength)
	for _, tc := range []struct {
		name     string
		user     error // ValidateName
		internal error // ValidateInternalName
	}{
		{"orders", nil, ErrReservedName},
		{"a", nil, ErrReservedName},
		{"Orders.v2_eu-west-1", nil, ErrReservedName},
		{"...", nil, ErrReservedName},
		{"-", nil, ErrReservedName},
		{"_x", nil, ErrReservedName},
		{long, nil, ErrReservedName},
		{"__consumer_offsets", ErrReservedName, nil},
		{"__", ErrReservedName, nil},
		{"", ErrInvalidName, ErrInvalidName},
		{".", ErrInvalidName, ErrInvalidName},
		{"..", ErrInvalidName, ErrInvalidName},
		{long + "a", ErrInvalidName, ErrInvalidName},
		{"a/b", ErrInvalidName, ErrInvalidName},
		{"../etc", ErrInvalidName, ErrInvalidName},
		{`a\b`, ErrInvalidName, ErrInvalidName},
		{"a\x00b", ErrInvalidName, ErrInvalidName},
		{"a b", ErrInvalidName, ErrInvalidName},
		{"a:b", ErrInvalidName, ErrInvalidName},
		{"caf\u00e9", ErrInvalidName, ErrInvalidName},
		{"__a/b", ErrInvalidName, ErrInvalidName},
	} {
		if err := ValidateName(tc.name); !errors.Is(err, tc.user) || (tc.user == nil) != (err == nil) {
			t.Errorf("ValidateName(%q) = %v, want %v", tc.name, err, tc.user)
		}
		if err := ValidateInternalName(tc.name); !errors.Is(err, tc.internal) || (tc.internal == nil) != (err == nil) {
			t.Errorf("ValidateInternalName(%q) = %v, want %v", tc.name, err, tc.internal)
		}
	}
}

func TestCollisionKey(t *testing.T) {
	for _, tc := range []struct {
		a, b    string
		collide bool
	}{
		{"a.b", "a_b", true},
		{"Orders", "orders", true},
		{"A.B", "a_b", true},
		{"a-b", "a_b", false},
		{"ab", "a_b", false},
	} {
		if got := collisionKey(tc.a) == collisionKey(tc.b); got != tc.collide {
			t.Errorf("collide(%q, %q) = %v, want %v", tc.a, tc.b, got, tc.collide)
		}
	}
}

func TestParseDirName(t *testing.T) {
	for _, tc := range []struct {
		dir  string
		name string
		p    int32
		ok   bool
	}{
		{"orders-0", "orders", 0, true},
		{"orders-17", "orders", 17, true},
		{"a-b-3", "a-b", 3, true},
		{"__consumer_offsets-49", "__consumer_offsets", 49, true},
		{"orders-99999", "orders", 99999, true},
		{"orders-100000", "", 0, false},
		{"orders-01", "", 0, false},
		{"orders-+1", "", 0, false},
		{"orders--1", "orders-", 1, true}, // "orders-" is a valid name
		{"orders-", "", 0, false},
		{"-3", "", 0, false},
		{"orders", "", 0, false},
		{"orders-1.abc-delete", "", 0, false},
		{".-0", "", 0, false},
		{"a b-0", "", 0, false},
		{"orders-99999999999", "", 0, false},
	} {
		name, p, ok := ParseDirName(tc.dir)
		if name != tc.name || p != tc.p || ok != tc.ok {
			t.Errorf("ParseDirName(%q) = %q, %d, %v; want %q, %d, %v", tc.dir, name, p, ok, tc.name, tc.p, tc.ok)
		}
		if ok && DirName(name, p) != tc.dir {
			t.Errorf("DirName(%q, %d) = %q, want %q", name, p, DirName(name, p), tc.dir)
		}
	}
}

// FuzzValidateName checks that no accepted name can leave the data
// directory: no separators or NUL, not "." or "..", and every partition
// directory built from it is a direct child of the data directory.
func FuzzValidateName(f *testing.F) {
	for _, s := range []string{"orders", ".", "..", "...", "a/b", `a\b`, "a\x00", "__consumer_offsets",
		"..-0", "-", "a..b", strings.Repeat("x", 250), "/", "~", "a\u2215b"} {
		f.Add(s)
	}
	dir := filepath.Join(string(filepath.Separator), "data", "folio")
	f.Fuzz(func(t *testing.T, name string) {
		userErr, internalErr := ValidateName(name), ValidateInternalName(name)
		if userErr == nil && internalErr == nil {
			t.Fatalf("%q accepted as both a user and an internal name", name)
		}
		if userErr != nil && internalErr != nil {
			if !errors.Is(userErr, ErrInvalidName) && !errors.Is(userErr, ErrReservedName) {
				t.Fatalf("ValidateName(%q) = %v, not a typed error", name, userErr)
			}
			return
		}
		if strings.ContainsAny(name, "/\\\x00") || name == "." || name == ".." || len(name) > MaxNameLength {
			t.Fatalf("accepted %q", name)
		}
		for _, p := range []int32{0, 7, MaxPartitions - 1} {
			child := DirName(name, p)
			joined := filepath.Join(dir, child)
			if filepath.Dir(joined) != dir || filepath.Base(joined) != child {
				t.Fatalf("partition dir %q of %q resolves to %q, outside %q", child, name, joined, dir)
			}
			if len(child) > 255 {
				t.Fatalf("partition dir name of %q is %d bytes", name, len(child))
			}
			if n, q, ok := ParseDirName(child); !ok || n != name || q != p {
				t.Fatalf("ParseDirName(%q) = %q, %d, %v", child, n, q, ok)
			}
		}
	})
}
