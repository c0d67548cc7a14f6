package chaos

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"

	"github.com/shardmesh/shardmesh/admin"
)

// member is one member slot: a data directory (so one peer id) run by a sequence of
// processes.
type member struct {
	slot    int
	name    string
	dir     string
	journal string
	logPath string

	mu      sync.Mutex
	proc    *proc
	peerID  string
	client  *admin.Client
	addr    string
	stopped bool // SIGSTOPped by the driver
}

// proc is one sharddaemon process of a member.
type proc struct {
	cmd      *exec.Cmd
	started  time.Time
	pid      int
	exited   chan struct{}
	exitMono int64
	exitCode int
}

// exitRecord: a process of node (peer id) ended at mono.
type exitRecord struct {
	Name string
	Node string
	PID  int
	Mono int64
	Code int
}

// cluster runs the members.
type cluster struct {
	bin      string
	root     string
	flags    []string
	net      *network // nil: loopback, no partitions
	admin    crypto.PrivKey
	logf     func(format string, args ...any)
	tl       *timeline
	members  []*member
	exitsMu  sync.Mutex
	exits    []exitRecord
	maxSlots int
}

func (c *cluster) recordExit(m *member, p *proc) {
	c.exitsMu.Lock()
	defer c.exitsMu.Unlock()
	c.exits = append(c.exits, exitRecord{Name: m.name, Node: m.peerID, PID: p.pid, Mono: p.exitMono, Code: p.exitCode})
}

func (c *cluster) addMember() (*member, error) {
	i := len(c.members)
	if i >= c.maxSlots {
		return nil, fmt.Errorf("no member slot left (%d)", c.maxSlots)
	}
	name := fmt.Sprintf("m%d", i+1)
	m := &member{slot: i, name: name, dir: filepath.Join(c.root, name), journal: filepath.Join(c.root, name+".journal"), logPath: filepath.Join(c.root, name+".log")}
	c.members = append(c.members, m)
	return m, nil
}

// live returns whether m has a running process.
func (m *member) live() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.proc == nil {
		return false
	}
	select {
	case <-m.proc.exited:
		return false
	default:
		return true
	}
}

func (m *member) current() *proc {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.proc
}

// start runs a new process for m, joining through the members at join (none: form a
// cluster), and waits until it listens and an admin client is connected.
func (c *cluster) start(m *member, join []string) error {
	if m.live() {
		return fmt.Errorf("%s is running", m.name)
	}
	_ = os.Remove(filepath.Join(m.dir, "addrs"))
	listen := "/ip4/127.0.0.1/tcp/0"
	if c.net != nil {
		listen = "/ip4/" + c.net.ip(m.slot) + "/tcp/0"
	}
	args := append([]string{filepath.Join(c.bin, "sharddaemon"), "--data-dir", m.dir, "--listen", listen, "--entity-journal", m.journal}, c.flags...)
	if c.net != nil {
		args = append(args, "--open-mesh=on") // no cluster key on the run's own isolated network
	}
	for _, a := range join {
		args = append(args, "--join", a)
	}
	if c.net != nil {
		args = c.net.command(m.slot, args...)
	}
	logf, err := os.OpenFile(m.logPath, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	fmt.Fprintf(logf, "==== start %s\n", time.Now().Format(time.RFC3339Nano))
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		logf.Close()
		return err
	}
	p := &proc{cmd: cmd, started: time.Now(), pid: cmd.Process.Pid, exited: make(chan struct{})}
	go func() {
		err := cmd.Wait()
		p.exitMono = monoNow()
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			p.exitCode = ee.ExitCode()
		}
		logf.Close()
		c.recordExit(m, p)
		close(p.exited)
	}()
	m.mu.Lock()
	m.proc, m.stopped = p, false
	old := m.client
	m.client = nil
	m.mu.Unlock()
	if old != nil {
		old.Close()
	}
	addrs := filepath.Join(m.dir, "addrs")
	deadline := time.Now().Add(20 * time.Second)
	for {
		if b, err := os.ReadFile(addrs); err == nil && len(strings.Fields(string(b))) > 0 {
			m.mu.Lock()
			m.addr = strings.Fields(string(b))[0]
			m.peerID = m.addr[strings.LastIndex(m.addr, "/")+1:]
			m.mu.Unlock()
			break
		}
		select {
		case <-p.exited:
			return fmt.Errorf("%s exited with code %d at start (log %s)", m.name, p.exitCode, m.logPath)
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s did not listen within 20s (log %s)", m.name, m.logPath)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cl, err := admin.Dial(ctx, admin.ClientConfig{Node: m.addr, Identity: c.admin})
	if err != nil {
		return fmt.Errorf("%s: admin dial: %w", m.name, err)
	}
	m.mu.Lock()
	m.client = cl
	m.mu.Unlock()
	return nil
}

// adminClient returns m's client (nil when m has never started).
func (m *member) adminClient() *admin.Client {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.client
}

func (m *member) signal(sig syscall.Signal) {
	p := m.current()
	if p == nil {
		return
	}
	_ = p.cmd.Process.Signal(sig) // it may have exited already
	m.mu.Lock()
	switch sig {
	case syscall.SIGSTOP:
		m.stopped = true
	case syscall.SIGCONT:
		m.stopped = false
	}
	m.mu.Unlock()
}

func (m *member) isStopped() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.stopped
}

// wait waits up to timeout for m's process to exit; ok false when it still runs.
func (m *member) wait(timeout time.Duration) (code int, ok bool) {
	p := m.current()
	if p == nil {
		return 0, true
	}
	select {
	case <-p.exited:
		return p.exitCode, true
	case <-time.After(timeout):
		return 0, false
	}
}

// kill sends SIGKILL (after SIGCONT, in case it is stopped: a stopped process dies on
// SIGKILL too, but keep the bookkeeping straight) and waits for the exit.
func (m *member) kill() {
	p := m.current()
	if p == nil {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.exited
	m.mu.Lock()
	m.stopped = false
	m.mu.Unlock()
}

// liveMembers returns the members with a running process that the driver has not
// stopped.
func (c *cluster) liveMembers() []*member {
	var out []*member
	for _, m := range c.members {
		if m.live() && !m.isStopped() {
			out = append(out, m)
		}
	}
	return out
}

// joinAddrs returns the addresses of the live members other than not: a joining member
// tries them all, so one of them leaving meanwhile does not strand it.
func (c *cluster) joinAddrs(not *member) []string {
	var out []string
	for _, m := range c.liveMembers() {
		if m == not {
			continue
		}
		m.mu.Lock()
		a := m.addr
		m.mu.Unlock()
		if a != "" {
			out = append(out, a)
		}
	}
	return out
}

func (c *cluster) exitRecords() []exitRecord {
	c.exitsMu.Lock()
	defer c.exitsMu.Unlock()
	return append([]exitRecord(nil), c.exits...)
}

// close kills every process and closes the clients.
func (c *cluster) close() {
	for _, m := range c.members {
		if m.isStopped() {
			m.signal(syscall.SIGCONT)
		}
		m.kill()
		if cl := m.adminClient(); cl != nil {
			cl.Close()
		}
	}
}
