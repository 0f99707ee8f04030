package main

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"net"
	"os"
	"os/exec"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// The reading consumer of the read-paths suite runs in a child process, so
// that its CPU time and page faults are its own (getrusage of the child)
// and the sender's are the parent's. The child is this same binary,
// re-executed with a flag that the usage text does not list.
const (
	childFlag = "-reader-child"
	// childEnv is set on the child too: a test binary re-executed as the
	// child must recognise its role before the testing package parses flags.
	childEnv = "FOLIO_BENCH_READER_CHILD"
)

// childAddr reports whether args ask for the child role, and the parent's
// control address.
func childAddr(args []string) (string, bool) {
	if len(args) == 2 && args[0] == childFlag {
		return args[1], true
	}
	return "", false
}

// childCmd is one instruction on the control connection (JSON lines).
type childCmd struct {
	Op string `json:"op"` // "read" or "quit"
	// Conns is how many data connections to open and drain at once.
	Conns int `json:"conns"`
	// Buf is the size of each connection's read buffer, the size of one
	// read(2): a consumer's receive buffer.
	Buf int `json:"buf"`
	// Verify makes the child checksum what it reads (CRC-32C per
	// connection). Only untimed verification passes set it, since the
	// checksum is CPU the consumer would not otherwise spend.
	Verify bool `json:"verify"`
}

// childReport is the child's answer to a read command.
type childReport struct {
	Bytes []int64  `json:"bytes"` // per connection, in connection order
	Reads []int64  `json:"reads"` // read(2) calls that returned data, per connection
	CRC   []uint32 `json:"crc"`   // per connection, when verifying
	// Usage is getrusage(RUSAGE_SELF) of the child across the command:
	// from receiving it until the last connection reached EOF.
	Usage usage  `json:"usage"`
	Err   string `json:"err,omitempty"`
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// readerChild is the parent's handle on the child process.
type readerChild struct {
	cmd   *exec.Cmd
	ln    *net.TCPListener
	ctrl  net.Conn
	ctrlR *bufio.Reader
	// exited is closed when the child process has been reaped; waitErr is
	// its exit status.
	exited  chan struct{}
	waitErr error
}

// childTimeout bounds every wait on the child: a child that hangs must
// fail the run, not the whole program.
const childTimeout = 2 * time.Minute

// startReaderChild re-executes this binary as the reading consumer and
// waits for it to connect back over loopback.
func startReaderChild(ctx context.Context) (*readerChild, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("%w: find own executable: %v", ErrChild, err)
	}
	ln, err := net.ListenTCP("tcp", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		return nil, fmt.Errorf("%w: listen on loopback: %v", ErrChild, err)
	}
	cmd := exec.CommandContext(ctx, exe, childFlag, ln.Addr().String())
	cmd.Env = append(os.Environ(), childEnv+"=1")
	cmd.Stdout = os.Stderr // the child never writes stdout; keep ours clean
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		ln.Close()
		return nil, fmt.Errorf("%w: start %s: %v", ErrChild, exe, err)
	}
	c := &readerChild{cmd: cmd, ln: ln, exited: make(chan struct{})}
	go func() {
		c.waitErr = cmd.Wait()
		close(c.exited)
	}()
	ctrl, err := c.accept()
	if err != nil {
		c.kill()
		return nil, err
	}
	c.ctrl = ctrl
	c.ctrlR = bufio.NewReader(ctrl)
	return c, nil
}

// accept takes the next connection from the child, giving up if the child
// exits or does not connect in time.
func (c *readerChild) accept() (*net.TCPConn, error) {
	if err := c.ln.SetDeadline(time.Now().Add(childTimeout)); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrChild, err)
	}
	conn, err := c.ln.AcceptTCP()
	if err != nil {
		select {
		case <-c.exited:
			return nil, fmt.Errorf("%w: exited before connecting: %v", ErrChild, c.waitErr)
		default:
		}
		return nil, fmt.Errorf("%w: accept: %v", ErrChild, err)
	}
	return conn, nil
}

// open asks the child for n data connections and returns them in the
// child's order. The sender writes to them and then closes them; wait
// collects the child's report.
func (c *readerChild) open(n, buf int, verify bool) ([]*net.TCPConn, error) {
	if err := c.send(childCmd{Op: "read", Conns: n, Buf: buf, Verify: verify}); err != nil {
		return nil, err
	}
	conns := make([]*net.TCPConn, n)
	closeAll := func() {
		for _, cn := range conns {
			if cn != nil {
				cn.Close()
			}
		}
	}
	for range n {
		cn, err := c.accept()
		if err != nil {
			closeAll()
			return nil, err
		}
		// Each data connection starts with its 4-byte index so that the
		// report's per-connection figures line up with the sender's.
		var idx [4]byte
		cn.SetReadDeadline(time.Now().Add(childTimeout))
		if _, err := io.ReadFull(cn, idx[:]); err != nil {
			cn.Close()
			closeAll()
			return nil, fmt.Errorf("%w: read connection index: %v", ErrChild, err)
		}
		cn.SetReadDeadline(time.Time{})
		i := int(binary.BigEndian.Uint32(idx[:]))
		if i < 0 || i >= n || conns[i] != nil {
			cn.Close()
			closeAll()
			return nil, fmt.Errorf("%w: bad connection index %d of %d", ErrChild, i, n)
		}
		conns[i] = cn
	}
	return conns, nil
}

// wait reads the child's report for the last read command.
func (c *readerChild) wait() (childReport, error) {
	var rep childReport
	c.ctrl.SetReadDeadline(time.Now().Add(childTimeout))
	line, err := c.ctrlR.ReadBytes('\n')
	if err != nil {
		return rep, fmt.Errorf("%w: read report: %v", ErrChild, err)
	}
	if err := json.Unmarshal(line, &rep); err != nil {
		return rep, fmt.Errorf("%w: decode report %q: %v", ErrChild, line, err)
	}
	if rep.Err != "" {
		return rep, fmt.Errorf("%w: %s", ErrChild, rep.Err)
	}
	return rep, nil
}

func (c *readerChild) send(cmd childCmd) error {
	b, err := json.Marshal(cmd)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrChild, err)
	}
	c.ctrl.SetWriteDeadline(time.Now().Add(childTimeout))
	if _, err := c.ctrl.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("%w: send command: %v", ErrChild, err)
	}
	return nil
}

// close tells the child to quit and reaps it; it kills a child that does
// not go.
func (c *readerChild) close() error {
	err := c.send(childCmd{Op: "quit"})
	if err == nil {
		select {
		case <-c.exited:
		case <-time.After(10 * time.Second):
			err = fmt.Errorf("%w: did not quit", ErrChild)
		}
	}
	if err != nil {
		c.kill()
		return err
	}
	c.ctrl.Close()
	c.ln.Close()
	if c.waitErr != nil {
		return fmt.Errorf("%w: exit: %v", ErrChild, c.waitErr)
	}
	return nil
}

func (c *readerChild) kill() {
	if c.ctrl != nil {
		c.ctrl.Close()
	}
	c.ln.Close()
	c.cmd.Process.Kill()
	<-c.exited
}

// socketBuffers reads SO_SNDBUF and SO_RCVBUF of a connection, for the
// report: on loopback they bound how much one write can hand the kernel.
func socketBuffers(c *net.TCPConn) (snd, rcv int, err error) {
	rc, err := c.SyscallConn()
	if err != nil {
		return 0, 0, err
	}
	var serr error
	cerr := rc.Control(func(fd uintptr) {
		snd, serr = unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_SNDBUF)
		if serr == nil {
			rcv, serr = unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUF)
		}
	})
	return snd, rcv, errors.Join(cerr, serr)
}

// childMain is the child process: connect to the parent, then serve read
// commands until told to quit or the control connection ends.
func childMain(addr string, stderr io.Writer) int {
	if err := serveChild(addr); err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	return 0
}

func serveChild(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil || host != "127.0.0.1" {
		// The bench only ever talks over loopback; refuse anything else.
		return fmt.Errorf("%w: control address %q is not 127.0.0.1", ErrChild, addr)
	}
	ctrl, err := net.Dial("tcp", addr)
	if err != nil {
		return fmt.Errorf("%w: dial parent: %v", ErrChild, err)
	}
	defer ctrl.Close()
	r := bufio.NewReader(ctrl)
	// Read buffers live across commands, like a consumer's: allocating them
	// per run would charge each run the page faults of fresh memory.
	var bufs [][]byte
	for {
		line, err := r.ReadBytes('\n')
		if errors.Is(err, io.EOF) {
			return nil // the parent went away: nothing left to serve
		}
		if err != nil {
			return fmt.Errorf("%w: read command: %v", ErrChild, err)
		}
		cmd, err := decodeCommand(line)
		if err != nil {
			return err
		}
		switch cmd.Op {
		case "quit":
			return nil
		case "read":
			rep := drain(addr, cmd, &bufs)
			b, err := json.Marshal(rep)
			if err != nil {
				return fmt.Errorf("%w: %v", ErrChild, err)
			}
			if _, err := ctrl.Write(append(b, '\n')); err != nil {
				return fmt.Errorf("%w: send report: %v", ErrChild, err)
			}
		}
	}
}

// Bounds of a read command: a command outside them is a bug in the parent
// or bytes that are not from it, and must not make the child allocate.
const (
	maxChildConns = 4096
	maxChildBuf   = 64 << 20
)

// decodeCommand parses and checks one control line.
func decodeCommand(line []byte) (childCmd, error) {
	var cmd childCmd
	if err := json.Unmarshal(line, &cmd); err != nil {
		return cmd, fmt.Errorf("%w: decode command %q: %v", ErrChild, line, err)
	}
	switch cmd.Op {
	case "quit":
	case "read":
		if cmd.Conns < 1 || cmd.Conns > maxChildConns || cmd.Buf < 1 || cmd.Buf > maxChildBuf {
			return cmd, fmt.Errorf("%w: read command with %d connections and a %d-byte buffer (limits %d, %d)",
				ErrChild, cmd.Conns, cmd.Buf, maxChildConns, maxChildBuf)
		}
	default:
		return cmd, fmt.Errorf("%w: unknown command %q", ErrChild, cmd.Op)
	}
	return cmd, nil
}

// drain opens cmd.Conns connections and reads each to EOF, discarding the
// bytes, in one goroutine per connection: the consumer does nothing with
// the bytes but receive them, so its CPU is the cost of receiving.
func drain(addr string, cmd childCmd, bufs *[][]byte) childReport {
	var rep childReport
	if cmd.Conns < 1 || cmd.Conns > maxChildConns || cmd.Buf < 1 || cmd.Buf > maxChildBuf {
		rep.Err = fmt.Sprintf("bad read command: %d connections, %d-byte buffer", cmd.Conns, cmd.Buf)
		return rep
	}
	rep.Bytes = make([]int64, cmd.Conns)
	rep.Reads = make([]int64, cmd.Conns)
	if cmd.Verify {
		rep.CRC = make([]uint32, cmd.Conns)
	}
	for len(*bufs) < cmd.Conns {
		*bufs = append(*bufs, nil)
	}
	for i := range cmd.Conns {
		if len((*bufs)[i]) != cmd.Buf {
			(*bufs)[i] = make([]byte, cmd.Buf)
		}
	}
	u0, err := selfUsage()
	if err != nil {
		rep.Err = err.Error()
		return rep
	}
	errs := make([]error, cmd.Conns)
	var wg sync.WaitGroup
	for i := range cmd.Conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = drainOne(addr, i, cmd, (*bufs)[i], &rep)
		}()
	}
	wg.Wait()
	u1, err := selfUsage()
	if err := errors.Join(append(errs, err)...); err != nil {
		rep.Err = err.Error()
		return rep
	}
	rep.Usage = u1.sub(u0)
	return rep
}

func drainOne(addr string, i int, cmd childCmd, buf []byte, rep *childReport) error {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return fmt.Errorf("connection %d: dial: %w", i, err)
	}
	defer c.Close()
	var idx [4]byte
	binary.BigEndian.PutUint32(idx[:], uint32(i))
	if _, err := c.Write(idx[:]); err != nil {
		return fmt.Errorf("connection %d: send index: %w", i, err)
	}
	// A plain read loop: io.Copy to io.Discard would use io.Discard's own
	// 8 KiB buffer and turn the buffer size into a hidden parameter.
	var n, reads int64
	var crc uint32
	for {
		k, err := c.Read(buf)
		n += int64(k)
		if k > 0 {
			reads++
		}
		if cmd.Verify {
			crc = crc32.Update(crc, castagnoli, buf[:k])
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("connection %d: read after %d bytes: %w", i, n, err)
		}
	}
	rep.Bytes[i] = n
	rep.Reads[i] = reads
	if cmd.Verify {
		rep.CRC[i] = crc
	}
	return nil
}
