package faultfs

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/foliolog/folio/vfs"
)

// The differential test: a random sequence of file-system operations runs
// on a FS over a real directory and, in parallel, on a small in-memory
// model of the per-directory durability rules written independently of the
// FS (it never reads the disk). After every operation the disk must
// match the model's live tree; at every power cut, FS.Durable must
// agree with the model before the cut and the disk must equal the model's
// durable tree after it.

var modelSeed = flag.Uint64("vfs.seed", 0, "replay TestFaultFSModel with this seed (0: time-based)")

// mnode is a file or directory of the model.
type mnode struct {
	dir      bool
	data     []byte            // files: live content
	dur      []byte            // files: content as of the last Sync
	names    map[string]*mnode // dirs: live entries
	durNames map[string]*mnode // dirs: entries as of the last SyncDir
}

func newMDir() *mnode {
	return &mnode{dir: true, names: map[string]*mnode{}, durNames: map[string]*mnode{}}
}

type mhandle struct {
	f    vfs.File
	node *mnode
	off  int64 // the file offset, for Write
	dead error // ErrPowerCut or ErrCrashed once killed
}

type modelRun struct {
	t       testing.TB
	fs      *FS
	root    string
	mroot   *mnode
	handles []*mhandle
	in      []byte
	log     []string
}

// byte returns the next input byte; ok is false when the input is used up.
func (r *modelRun) next() (byte, bool) {
	if len(r.in) == 0 {
		return 0, false
	}
	b := r.in[0]
	r.in = r.in[1:]
	return b, true
}

func (r *modelRun) nextOr0() int {
	b, _ := r.next()
	return int(b)
}

var modelNames = []string{"a", "b", "c"}

// path picks one of the paths of depth 1 or 2 the test plays with.
func (r *modelRun) path() string {
	b := r.nextOr0()
	first := modelNames[b%3]
	if (b/3)%2 == 0 {
		return first
	}
	return first + "/" + modelNames[(b/6)%3]
}

// dir picks the root or a depth-1 path.
func (r *modelRun) dir() string {
	b := r.nextOr0() % 4
	if b == 3 {
		return ""
	}
	return modelNames[b]
}

// lookup returns the model node at rel in the live tree, and its parent.
func (r *modelRun) lookup(rel string) (node, parent *mnode, name string) {
	if rel == "" {
		return r.mroot, nil, ""
	}
	parts := strings.Split(rel, "/")
	cur := r.mroot
	for i, p := range parts {
		if cur == nil || !cur.dir {
			return nil, nil, ""
		}
		if i == len(parts)-1 {
			return cur.names[p], cur, p
		}
		cur = cur.names[p]
	}
	return nil, nil, ""
}

func (r *modelRun) abs(rel string) string { return filepath.Join(r.root, rel) }

func (r *modelRun) handle() *mhandle {
	if len(r.handles) == 0 {
		return nil
	}
	return r.handles[r.nextOr0()%len(r.handles)]
}

func (r *modelRun) logf(format string, args ...any) {
	r.log = append(r.log, fmt.Sprintf(format, args...))
}

func (r *modelRun) fatalf(format string, args ...any) {
	r.t.Helper()
	tail := r.log
	if len(tail) > 40 {
		tail = tail[len(tail)-40:]
	}
	r.t.Fatalf("%s\nlast operations:\n  %s", fmt.Sprintf(format, args...), strings.Join(tail, "\n  "))
}

func (r *modelRun) checkDead(h *mhandle, err error) {
	r.t.Helper()
	if !errors.Is(err, h.dead) {
		r.fatalf("call on a handle dead by %v returned %v", h.dead, err)
	}
}

func setLen(b []byte, n int) []byte {
	if n <= len(b) {
		return b[:n]
	}
	return append(b, make([]byte, n-len(b))...)
}

func writeModel(node *mnode, p []byte, off int64) {
	end := int(off) + len(p)
	if end > len(node.data) {
		node.data = setLen(node.data, end)
	}
	copy(node.data[off:], p)
}

// step runs one operation; it returns false when the input is used up.
func (r *modelRun) step() bool {
	opb, ok := r.next()
	if !ok {
		return false
	}
	// Weights out of 64; a power cut is rare so that files get some history.
	switch op := opb % 64; {
	case op < 10: // create or open
		rel := r.path()
		f, err := r.fs.OpenFile(r.abs(rel), os.O_RDWR|os.O_CREATE, 0o644)
		r.logf("create %s: %v", rel, err)
		if err != nil {
			return true
		}
		node, parent, name := r.lookup(rel)
		if node == nil {
			node = &mnode{}
			parent.names[name] = node
		}
		r.handles = append(r.handles, &mhandle{f: f, node: node})
	case op < 25: // write
		h := r.handle()
		if h == nil {
			return true
		}
		n := 1 + r.nextOr0()%24
		p := bytes.Repeat([]byte{byte('A' + r.nextOr0()%26)}, n)
		mode := r.nextOr0()
		var off int64
		var err error
		switch mode % 3 {
		case 0: // at the file offset
			off = h.off
			_, err = h.f.Write(p)
		case 1: // at the end
			off = int64(len(h.node.data))
			_, err = h.f.WriteAt(p, off)
		default: // somewhere, maybe past the end
			off = int64(mode % 40)
			_, err = h.f.WriteAt(p, off)
		}
		r.logf("write %d@%d: %v", n, off, err)
		if h.dead != nil {
			r.checkDead(h, err)
			return true
		}
		if err != nil {
			r.fatalf("write: %v", err)
		}
		writeModel(h.node, p, off)
		if mode%3 == 0 {
			h.off += int64(n)
		}
	case op < 32: // sync
		h := r.handle()
		if h == nil {
			return true
		}
		err := h.f.Sync()
		r.logf("sync: %v", err)
		if h.dead != nil {
			r.checkDead(h, err)
			return true
		}
		if err != nil {
			r.fatalf("sync: %v", err)
		}
		h.node.dur = bytes.Clone(h.node.data)
	case op < 39: // syncdir
		rel := r.dir()
		err := r.fs.SyncDir(r.abs(rel))
		r.logf("syncdir %q: %v", rel, err)
		if err != nil {
			return true
		}
		node, _, _ := r.lookup(rel)
		if node == nil || !node.dir {
			r.fatalf("syncdir %q succeeded on no directory", rel)
		}
		node.durNames = cloneNames(node.names)
	case op < 44: // rename
		from, to := r.path(), r.path()
		err := r.fs.Rename(r.abs(from), r.abs(to))
		r.logf("rename %s %s: %v", from, to, err)
		if err != nil {
			return true
		}
		src, sp, sn := r.lookup(from)
		dst, dp, dn := r.lookup(to)
		if src == nil || dp == nil {
			r.fatalf("rename %s -> %s succeeded but the model has no such entries", from, to)
		}
		if src != dst {
			delete(sp.names, sn)
			dp.names[dn] = src
		}
	case op < 48: // remove
		rel := r.path()
		err := r.fs.Remove(r.abs(rel))
		r.logf("remove %s: %v", rel, err)
		if err != nil {
			return true
		}
		_, parent, name := r.lookup(rel)
		delete(parent.names, name)
	case op < 52: // mkdir
		rel := r.path()
		err := r.fs.MkdirAll(r.abs(rel), 0o755)
		r.logf("mkdir %s: %v", rel, err)
		if err != nil {
			return true
		}
		cur := r.mroot
		for _, p := range strings.Split(rel, "/") {
			next := cur.names[p]
			if next == nil {
				next = newMDir()
				cur.names[p] = next
			}
			cur = next
		}
	case op < 56: // truncate, allocate or close
		h := r.handle()
		if h == nil {
			return true
		}
		var err error
		switch k := r.nextOr0(); k % 3 {
		case 0:
			size := int64(r.nextOr0() % 48)
			err = h.f.Truncate(size)
			r.logf("truncate %d: %v", size, err)
			if h.dead == nil && err == nil {
				h.node.data = setLen(h.node.data, int(size))
			}
		case 1:
			off, n := int64(r.nextOr0()%32), int64(1+r.nextOr0()%32)
			err = h.f.Allocate(off, n)
			r.logf("allocate %d+%d: %v", off, n, err)
			if h.dead == nil && err == nil && int(off+n) > len(h.node.data) {
				h.node.data = setLen(h.node.data, int(off+n))
			}
		default:
			err = h.f.Close()
			r.logf("close: %v", err)
			if h.dead == nil && err == nil {
				i := slices.Index(r.handles, h)
				r.handles = slices.Delete(r.handles, i, i+1)
			}
		}
		if h.dead != nil {
			r.checkDead(h, err)
		} else if err != nil {
			r.fatalf("handle op: %v", err)
		}
	case op < 59: // an injected failure: a torn write, or a failed sync or syncdir
		r.injected()
	case op < 60:
		if r.nextOr0()%4 == 0 {
			r.logf("crash")
			r.fs.Crash()
			r.killHandles(ErrCrashed)
			return true
		}
		r.powerCut()
	default: // read back through a handle
		h := r.handle()
		if h == nil {
			return true
		}
		buf := make([]byte, len(h.node.data)+8)
		n, err := h.f.ReadAt(buf, 0)
		if h.dead != nil {
			r.checkDead(h, err)
			return true
		}
		if !bytes.Equal(buf[:n], h.node.data) {
			r.fatalf("read %q, model has %q", buf[:n], h.node.data)
		}
	}
	r.checkLive()
	return true
}

// killHandles marks the open handles dead and keeps only the two most
// recent of them (calls on those must keep failing), so that later
// operations mostly go to new handles.
func (r *modelRun) killHandles(reason error) {
	var keep []*mhandle
	for _, h := range r.handles {
		if h.dead == nil {
			h.dead = reason
		}
	}
	if n := len(r.handles); n > 2 {
		keep = r.handles[n-2:]
	} else {
		keep = r.handles
	}
	r.handles = slices.Clone(keep)
}

func (r *modelRun) injected() {
	h := r.handle()
	if h == nil || h.dead != nil {
		return
	}
	switch k := r.nextOr0(); k % 3 {
	case 0:
		n := r.nextOr0() % 8
		p := bytes.Repeat([]byte{'t'}, 8)
		off := int64(len(h.node.data))
		r.fs.SetHook(FailNth(OpWrite, 1, &ShortWriteError{N: n, Err: syscall.EIO}))
		m, err := h.f.WriteAt(p, off)
		r.fs.SetHook(nil)
		r.logf("torn write %d of 8: %d, %v", n, m, err)
		if m != n || !errors.Is(err, ErrShortWrite) || !errors.Is(err, syscall.EIO) {
			r.fatalf("torn write: n=%d err=%v, want n=%d and ErrShortWrite", m, err, n)
		}
		writeModel(h.node, p[:n], off)
	case 1:
		r.fs.SetHook(FailNth(OpSync, 1, syscall.EIO))
		err := h.f.Sync()
		r.fs.SetHook(nil)
		r.logf("failed sync: %v", err)
		if !errors.Is(err, syscall.EIO) {
			r.fatalf("injected sync failure returned %v", err)
		}
	default:
		rel := r.dir()
		r.fs.SetHook(FailNth(OpSyncDir, 1, syscall.ENOSPC))
		err := r.fs.SyncDir(r.abs(rel))
		r.fs.SetHook(nil)
		r.logf("failed syncdir %q: %v", rel, err)
		if !errors.Is(err, vfs.ErrNoSpace) || !errors.Is(err, syscall.ENOSPC) {
			r.fatalf("injected syncdir failure returned %v", err)
		}
	}
}

func cloneNames(m map[string]*mnode) map[string]*mnode {
	c := make(map[string]*mnode, len(m))
	for k, v := range m {
		c[k] = v
	}
	return c
}

// durableTree is the model's prediction of the disk after a power cut: the
// durable entries from the root in name order, a directory kept only under
// the first name that reaches it, a file under every name.
func (r *modelRun) durableTree() map[string]string {
	out := map[string]string{}
	seen := map[*mnode]bool{r.mroot: true}
	var walk func(d *mnode, prefix string)
	walk = func(d *mnode, prefix string) {
		names := make([]string, 0, len(d.durNames))
		for n := range d.durNames {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			c := d.durNames[n]
			p := prefix + n
			if c.dir {
				if seen[c] {
					continue
				}
				seen[c] = true
				out[p] = "dir"
				walk(c, p+"/")
				continue
			}
			out[p] = "file:" + string(c.dur)
		}
	}
	walk(r.mroot, "")
	return out
}

func (r *modelRun) liveTree() map[string]string {
	out := map[string]string{}
	var walk func(d *mnode, prefix string)
	walk = func(d *mnode, prefix string) {
		for n, c := range d.names {
			if c.dir {
				out[prefix+n] = "dir"
				walk(c, prefix+n+"/")
			} else {
				out[prefix+n] = "file:" + string(c.data)
			}
		}
	}
	walk(r.mroot, "")
	return out
}

func diskTree(t testing.TB, root string) map[string]string {
	out := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil || p == root {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if d.IsDir() {
			out[rel] = "dir"
			return nil
		}
		data, err := os.ReadFile(p)
		out[rel] = "file:" + string(data)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func treeDiff(got, want map[string]string) string {
	var keys []string
	for k := range got {
		keys = append(keys, k)
	}
	for k := range want {
		if _, ok := got[k]; !ok {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		g, gok := got[k]
		w, wok := want[k]
		if gok != wok || g != w {
			fmt.Fprintf(&b, "  %s: got %q (%v), want %q (%v)\n", k, g, gok, w, wok)
		}
	}
	return b.String()
}

func (r *modelRun) checkLive() {
	r.t.Helper()
	if d := treeDiff(diskTree(r.t, r.root), r.liveTree()); d != "" {
		r.fatalf("disk differs from the model's live tree:\n%s", d)
	}
}

// allPaths lists every path the run can touch.
func allPaths() []string {
	var ps []string
	for _, a := range modelNames {
		ps = append(ps, a)
		for _, b := range modelNames {
			ps = append(ps, a+"/"+b)
		}
	}
	return ps
}

func (r *modelRun) powerCut() {
	r.t.Helper()
	want := r.durableTree()
	for _, p := range allPaths() {
		data, ok := r.fs.Durable(r.abs(p))
		w, wok := want[p]
		isFile := wok && strings.HasPrefix(w, "file:")
		if ok != isFile || (ok && "file:"+string(data) != w) {
			r.fatalf("Durable(%s) = %q, %v; model says %q", p, data, ok, w)
		}
		names, ok := r.fs.DurableNames(r.abs(p))
		if ok != (w == "dir") {
			r.fatalf("DurableNames(%s) ok=%v; model says %q", p, ok, w)
		}
		if ok {
			var wantNames []string
			for q := range want {
				if strings.HasPrefix(q, p+"/") && !strings.Contains(q[len(p)+1:], "/") {
					wantNames = append(wantNames, q[len(p)+1:])
				}
			}
			sort.Strings(wantNames)
			if !slices.Equal(names, wantNames) {
				r.fatalf("DurableNames(%s) = %v, model says %v", p, names, wantNames)
			}
		}
	}
	err := r.fs.PowerCut()
	r.logf("power cut: %v", err)
	if err != nil {
		r.fatalf("PowerCut: %v", err)
	}
	if d := treeDiff(diskTree(r.t, r.root), want); d != "" {
		r.fatalf("disk after the power cut differs from the durable model:\n%s", d)
	}
	r.killHandles(ErrPowerCut)
	// The model's new state: the durable tree, all of it durable.
	r.mroot = rebuildModel(r.mroot)
}

// rebuildModel returns the model after a power cut: the durable tree,
// walked in name order (the order decides which parent keeps a doubly
// durable directory), with everything in it durable.
func rebuildModel(root *mnode) *mnode {
	return buildSorted(root, map[*mnode]bool{root: true})
}

func buildSorted(d *mnode, seen map[*mnode]bool) *mnode {
	nd := newMDir()
	names := make([]string, 0, len(d.durNames))
	for n := range d.durNames {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		c := d.durNames[n]
		if c.dir {
			if seen[c] {
				continue
			}
			seen[c] = true
			sub := buildSorted(c, seen)
			nd.names[n], nd.durNames[n] = sub, sub
			continue
		}
		f := &mnode{data: bytes.Clone(c.dur), dur: bytes.Clone(c.dur)}
		nd.names[n], nd.durNames[n] = f, f
	}
	return nd
}

func runModel(t testing.TB, in []byte) {
	root := t.TempDir()
	r := &modelRun{t: t, fs: New(), root: root, mroot: newMDir(), in: in}
	for r.step() {
	}
	r.powerCut()
	for _, h := range r.handles {
		h.f.Close()
	}
	if n := r.fs.OpenHandles(); n != 0 {
		t.Fatalf("%d handles still open after a power cut", n)
	}
}

func TestFaultFSModel(t *testing.T) {
	seed := *modelSeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (replay with -vfs.seed=%d)", seed, seed)
	rng := rand.New(rand.NewPCG(seed, 0x5f5f))
	runs, ops := 40, 400
	if testing.Short() {
		runs = 8
	}
	for i := range runs {
		in := make([]byte, ops*4)
		for j := range in {
			in[j] = byte(rng.UintN(256))
		}
		t.Run(fmt.Sprint(i), func(t *testing.T) { runModel(t, in) })
	}
}

// Opcodes of step, for readable seeds (the byte's value mod 64 picks the
// operation; what follows it depends on the operation).
const (
	fzCreate   = 0  // path
	fzWrite    = 10 // handle, len-1, letter, mode (0 offset, 1 end, else at mode%40)
	fzSync     = 25 // handle
	fzSyncDir  = 32 // dir (0 a, 1 b, 2 c, 3 root)
	fzRename   = 39 // path, path
	fzRemove   = 44 // path
	fzMkdir    = 48 // path
	fzHandleOp = 52 // handle, k (0 truncate, 1 allocate, 2 close), args
	fzInject   = 56 // handle, k (0 torn write, 1 failed sync, 2 failed syncdir), arg
	fzCut      = 59 // k (0 crash, else power cut)
	fzRead     = 60 // handle
	// Paths: 0 a, 1 b, 2 c, 9 a/b, 15 a/c, 16 b/c.
)

func FuzzFaultFS(f *testing.F) {
	// A synced file in a never-synced directory is lost.
	f.Add([]byte{fzCreate, 0, fzWrite, 0, 4, 0, 1, fzSync, 0, fzCut, 1})
	// ... and kept once the directory is synced.
	f.Add([]byte{fzCreate, 0, fzWrite, 0, 4, 0, 1, fzSync, 0, fzSyncDir, 3, fzCut, 1})
	// A file moved between directories, only the destination synced.
	f.Add([]byte{
		fzMkdir, 0, fzMkdir, 1, fzSyncDir, 3, fzCreate, 15, fzWrite, 0, 7, 2, 1, fzSync, 0,
		fzSyncDir, 0, fzRename, 15, 16, fzSyncDir, 1, fzCut, 1, fzRead, 0,
	})
	// A directory renamed over a removed one, a torn write, a crash, then a cut.
	f.Add([]byte{
		fzMkdir, 9, fzSyncDir, 3, fzSyncDir, 0, fzCreate, 15, fzInject, 0, 0, 3,
		fzRemove, 9, fzRename, 0, 1, fzCut, 0, fzWrite, 0, 2, 1, 0, fzHandleOp, 0, 1, 5, 9, fzCut, 1,
	})
	// Truncate, allocate, failed sync and syncdir, close.
	f.Add([]byte{
		fzCreate, 1, fzWrite, 0, 20, 3, 1, fzSync, 0, fzSyncDir, 3, fzHandleOp, 0, 0, 4,
		fzInject, 0, 1, fzHandleOp, 0, 1, 30, 30, fzInject, 0, 2, 3, fzHandleOp, 0, 2, fzCut, 1,
	})
	f.Fuzz(func(t *testing.T, in []byte) {
		if len(in) > 2000 {
			in = in[:2000]
		}
		runModel(t, in)
	})
}
