package harness

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"
)

// DefaultStopGrace is how long a stopped harness gets between SIGTERM and SIGKILL.
const DefaultStopGrace = 3 * time.Second

// DefaultInterruptGrace is how long a stopped harness gets, after its
// in-protocol interrupt, to end its turn, report its result and exit on its
// own before it is signalled.
const DefaultInterruptGrace = 3 * time.Second

// DefaultResultGrace is how long a harness may take to exit once its result
// line has arrived and its stdin is closed (measured: 30–60 ms); after that it
// is stopped, and the result still counts.
const DefaultResultGrace = 10 * time.Second

// Bounds of one run's buffers.
const (
	// maxLine bounds one stream-json line. Claude Code clips what its tools
	// return and the proxy holds the model's answers to their max_tokens, so
	// its real lines stay far below it.
	maxLine      = 8 << 20
	stderrTail   = 8 << 10
	eventsBuffer = 64
)

// errLineTooLong ends a run whose harness printed a line past maxLine: what
// the line said cannot be read, so the job cannot be followed further.
var errLineTooLong = fmt.Errorf("the harness printed a stream-json line longer than %d MiB, which the bridge does not read: the run was stopped (what that line reported, a step or the result, would otherwise be lost)", maxLine>>20)

// ClaudeCode runs Claude Code headless: `claude -p --output-format stream-json
// --verbose --input-format stream-json`, the task on stdin.
type ClaudeCode struct {
	// Bin is the resolved binary (see Locate). Empty: every Start fails with
	// LookupErr (Locate's error), or ErrNoBinary.
	Bin       string
	LookupErr error
	// Environ is the daemon's environment; only AllowedEnv names pass to the child.
	Environ []string
	// UntrustedDirs are directories a job may write (the allowed roots, the
	// state dir, the temp dirs): no PATH entry in one, or in the job's
	// workspace, reaches the harness (TrustedPath).
	UntrustedDirs []string
	// StopGrace is the SIGTERM→SIGKILL delay; 0 means DefaultStopGrace.
	StopGrace time.Duration
	// InterruptGrace is the interrupt→SIGTERM delay of a Stop; 0 means
	// DefaultInterruptGrace, negative skips the interrupt.
	InterruptGrace time.Duration
	// ResultGrace bounds the exit after the result line; 0 means DefaultResultGrace.
	ResultGrace time.Duration
	// NoRetries: the model endpoint retries by itself (the bridge's model
	// proxy), so the harness must not retry again (CLAUDE_CODE_MAX_RETRIES=0).
	NoRetries bool
}

var _ Harness = (*ClaudeCode)(nil)

// Locate finds the Claude Code binary: configured (BRIDGE_CLAUDE_BIN) if set —
// it must then exist —, else the first existing pinned path, else `claude` on
// PATH via lookPath. It returns ErrNoBinary (wrapped) when none is found.
// The path returned is absolute: the harness runs in the workspace, not here.
func Locate(configured string, pinned []string, lookPath func(string) (string, error)) (string, error) {
	if configured != "" {
		if isExecutable(configured) {
			return filepath.Abs(configured)
		}
		return "", fmt.Errorf("BRIDGE_CLAUDE_BIN=%s is not an executable file: %w", configured, ErrNoBinary)
	}
	for _, p := range pinned {
		if p != "" && isExecutable(p) {
			return filepath.Abs(p)
		}
	}
	if lookPath != nil {
		if p, err := lookPath("claude"); err == nil {
			return filepath.Abs(p)
		}
	}
	return "", ErrNoBinary
}

// PinnedPaths lists where scripts/install.sh puts the pinned binary,
// relative to the directory of the bridge's executable (bin/ or the repo
// root). Never the working directory: a daemon inherits its starter's, often
// a project a job can write, and a .cache/bin/claude planted there would run
// as every job's harness (e2e TestDaemonNeverTakesClaudeCodeFromItsWorkingDirectory).
// A workspace holding the executable's dir is refused at admission.
func PinnedPaths(executable string) []string {
	if executable == "" {
		return nil
	}
	d := filepath.Dir(executable)
	return []string{filepath.Join(d, ".cache", "bin", "claude"), filepath.Join(d, "..", ".cache", "bin", "claude")}
}

func isExecutable(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular() && st.Mode().Perm()&0o111 != 0
}

// Start launches Claude Code for spec in its own process group.
func (c *ClaudeCode) Start(ctx context.Context, spec Spec) (Run, error) {
	defer spec.CloseWrapFiles() // once started, the child has its own copies
	if c.Bin == "" {
		if c.LookupErr != nil {
			return nil, c.LookupErr
		}
		return nil, ErrNoBinary
	}
	if spec.ConfigDir == "" || spec.Workspace == "" || spec.JobID == "" {
		return nil, errors.New("harness: spec needs JobID, Workspace and ConfigDir")
	}
	if err := os.MkdirAll(filepath.Join(spec.ConfigDir, "home"), 0o700); err != nil {
		return nil, fmt.Errorf("harness config dir: %w", err)
	}
	if err := os.Chmod(spec.ConfigDir, 0o700); err != nil {
		return nil, fmt.Errorf("harness config dir: %w", err)
	}
	task, err := userMessage(spec.Task)
	if err != nil {
		return nil, fmt.Errorf("encode task: %w", err)
	}

	argv := append([]string{c.Bin}, Args(spec)...)
	if len(spec.Wrap) > 0 {
		argv = append(append([]string(nil), spec.Wrap...), argv...)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = spec.Workspace
	cmd.Env = c.Env(spec)
	cmd.ExtraFiles = spec.WrapFiles
	setProcessGroup(cmd)
	if spec.WrapAttr != nil {
		spec.WrapAttr(cmd.SysProcAttr)
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("harness stdin: %w", err)
	}
	// Plain os.Pipes for stdout and stderr: cmd.Wait then reaps the process
	// without waiting for copies, which a leftover grandchild holding the pipe
	// open would otherwise block forever.
	outR, outW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("harness stdout: %w", err)
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		outR.Close()
		outW.Close()
		return nil, fmt.Errorf("harness stderr: %w", err)
	}
	cmd.Stdout, cmd.Stderr = outW, errW
	r := &run{
		jobID:       spec.JobID,
		cmd:         cmd,
		stdin:       stdin,
		events:      make(chan Event, eventsBuffer),
		done:        make(chan struct{}),
		stopCh:      make(chan struct{}),
		resultCh:    make(chan struct{}),
		grace:       c.StopGrace,
		resultGrace: c.ResultGrace,
		pending:     1, // the task
		interrupt:   c.InterruptGrace,
	}
	if r.grace <= 0 {
		r.grace = DefaultStopGrace
	}
	if r.interrupt == 0 {
		r.interrupt = DefaultInterruptGrace
	}
	if r.resultGrace <= 0 {
		r.resultGrace = DefaultResultGrace
	}
	err = startTracked(func() (int, error) {
		if err := cmd.Start(); err != nil {
			return 0, err
		}
		return cmd.Process.Pid, nil
	})
	outW.Close()
	errW.Close()
	if err != nil {
		outR.Close()
		errR.Close()
		return nil, fmt.Errorf("start %s: %w", c.Bin, err)
	}
	r.pid = cmd.Process.Pid
	lowerPriority(r.pid)
	r.ownNS = spec.OwnPIDNamespace
	r.unwatch = watchLimits(r.pid, cmd.Path, spec.Limits, spec.OwnPIDNamespace, r.passLimit)
	r.wg.Add(3)
	go func() {
		defer r.wg.Done()
		r.writeMu.Lock()
		_, err := stdin.Write(task)
		r.writeMu.Unlock()
		if err != nil {
			r.closeStdin()
		}
	}()
	go func() {
		defer r.wg.Done()
		defer errR.Close()
		_, _ = io.Copy(&r.stderr, errR)
	}()
	go r.read(outR)
	go r.watch(ctx)
	return r, nil
}

type run struct {
	jobID string
	cmd   *exec.Cmd
	pid   int
	// ownNS: the job runs in a PID namespace of its own, whose first
	// process is r.pid: once that is reaped, the kernel has ended every
	// other process of the job (no process leaves its namespace).
	ownNS  bool
	stdin  io.WriteCloser
	events chan Event
	stderr tailBuffer
	grace  time.Duration
	// interrupt is the grace a Stop gives after its interrupt (<0: none);
	// interrupted says the interrupt was sent.
	interrupt   time.Duration
	interrupted atomic.Bool

	wg   sync.WaitGroup // stdin writer, stdout reader, stderr reader
	done chan struct{}  // closed when the process is reaped, its group killed, its pipes drained
	exit Exit
	// stdinMu guards the input's state; writeMu serialises the writes,
	// which may wait on a full pipe and must not hold up a result's count.
	stdinMu  sync.Mutex
	writeMu  sync.Mutex
	stdinOff bool
	pending  int // messages whose turn has not ended (the task included); under stdinMu
	requests int // control requests sent; under stdinMu
	stopOnce sync.Once
	stopped  atomic.Bool
	stopCh   chan struct{}

	resultCh    chan struct{} // closed when the result line has been read
	resultOnce  sync.Once
	resultGrace time.Duration
	readErr     error // why read stopped early; read by watch after wg.Wait

	unwatch func()                 // ends the watch of the run's Limits
	breach  atomic.Pointer[Breach] // the bound the run passed, if it did
}

// passLimit is the watcher's word that the run passed a bound: it is
// recorded before anything dies, the group is killed (in the jail, the
// namespace's first process takes its PID namespace with it), then the
// watcher kills the tree it saw, and watch reaps it.
func (r *run) passLimit(b Breach) {
	r.breach.CompareAndSwap(nil, &b)
	signalGroup(r.pid, true)
}

func (r *run) Events() <-chan Event { return r.events }
func (r *run) PID() int             { return r.pid }

func (r *run) Wait() Exit {
	<-r.done
	return r.exit
}

// Stop asks the harness to interrupt its turn in-protocol, so that the tail
// of its stream and its result arrive, and lets it exit on its own; watch
// signals the group after the interrupt grace (at once when the interrupt
// could not be sent) and sends SIGKILL after the stop grace.
func (r *run) Stop() {
	r.stopOnce.Do(func() {
		r.stopped.Store(true)
		if r.interrupt > 0 {
			// Never wait here on the input pipe (a harness that stopped
			// reading, a large message ahead): the registry calls Stop under
			// its lock. A write stuck on a full pipe ends with EPIPE once the
			// signals after the interrupt grace have ended the process.
			r.interrupted.Store(true)
			go func() { // owner: the run; ends with its write
				if r.stopTurns() != nil {
					r.closeStdin()
					signalGroup(r.pid, false)
				}
			}()
		} else {
			r.closeStdin()
			signalGroup(r.pid, false)
		}
		close(r.stopCh)
	})
}

func (r *run) closeStdin() {
	r.stdinMu.Lock()
	defer r.stdinMu.Unlock()
	if !r.stdinOff {
		r.stdinOff = true
		r.stdin.Close()
	}
}

// watch owns the process: it turns ctx's end into Stop, escalates a Stop to
// SIGKILL after the grace, reaps the process and kills what is left of its
// group (background commands, a stuck child), which also closes the pipes.
func (r *run) watch(ctx context.Context) {
	exited := make(chan error, 1)
	go func() { exited <- r.cmd.Wait() }()
	stopCh := r.stopCh
	ctxDone := ctx.Done()
	resultCh := r.resultCh
	var term, kill, lingering <-chan time.Time
	var err error
loop:
	for {
		select {
		case err = <-exited:
			break loop
		case <-ctxDone:
			ctxDone = nil
			r.Stop()
		case <-stopCh:
			stopCh = nil
			if r.interrupted.Load() {
				t := time.NewTimer(r.interrupt)
				defer t.Stop()
				term = t.C
				continue
			}
			t := time.NewTimer(r.grace)
			defer t.Stop()
			kill = t.C
		case <-term:
			// The interrupt did not end the run in time: signals.
			term = nil
			r.closeStdin()
			signalGroup(r.pid, false)
			t := time.NewTimer(r.grace)
			defer t.Stop()
			kill = t.C
		case <-resultCh:
			resultCh = nil
			t := time.NewTimer(r.resultGrace)
			defer t.Stop()
			lingering = t.C
		case <-lingering:
			// The result is in but the process stays: end it without calling
			// it stopped, so the result still counts.
			lingering = nil
			signalGroup(r.pid, false)
			t := time.NewTimer(r.grace)
			defer t.Stop()
			kill = t.C
		case <-kill:
			kill = nil
			signalGroup(r.pid, true)
		}
	}
	r.unwatch()
	untrack(r.pid) // reaped by cmd.Wait
	signalGroup(r.pid, true)
	// Anything of the job that left the group (setsid, a daemonised child)
	// still carries the job's marker, and is below this process (a
	// subreaper: an orphan is re-parented here). A process killed by one
	// pass may have forked just before: look again until one finds nothing
	// (bounded). A job in a namespace of its own has no process left.
	for range 5 {
		if r.ownNS || killJobDescendants(r.jobID) == 0 {
			break
		}
	}
	// What also dropped the marker (env -i) was re-parented to this process
	// once its parent died, if it is a subreaper (bridge serve on Linux).
	ReapOrphans()
	r.closeStdin()
	r.wg.Wait()
	r.exit = exitOf(r.cmd, err)
	if r.exit.Err == nil {
		r.exit.Err = r.readErr
	}
	r.exit.Stopped = r.stopped.Load()
	r.exit.Limit = r.breach.Load()
	r.exit.Stderr = r.stderr.String()
	close(r.done)
}

// read parses stdout into events until EOF, closing stdin once the result
// line has arrived (with stream-json input the process waits for more input
// otherwise).
func (r *run) read(stdout io.ReadCloser) {
	defer r.wg.Done()
	defer close(r.events)
	defer stdout.Close()
	br := bufio.NewReaderSize(stdout, 64<<10)
	for {
		b, err := readLine(br, maxLine)
		if len(b) > 0 {
			for _, ev := range ParseLine(b, time.Now()) {
				r.events <- ev
				if ev.Kind == KindResult && r.turnEnded() {
					r.resultOnce.Do(func() { close(r.resultCh) })
				}
			}
		}
		if err != nil {
			if errors.Is(err, errLineTooLong) {
				r.readErr = err
				r.Stop()
			}
			// Drain so the child never blocks on a full pipe after a read error.
			_, _ = io.Copy(io.Discard, stdout)
			return
		}
	}
}

// readLine reads one line of at most limit bytes, its "\n" included; a
// longer one is errLineTooLong as soon as it passes limit, having held no
// more than limit.
func readLine(br *bufio.Reader, limit int) ([]byte, error) {
	var buf []byte
	for {
		chunk, err := br.ReadSlice('\n')
		if len(buf)+len(chunk) > limit {
			return nil, errLineTooLong
		}
		buf = append(buf, chunk...)
		if err == bufio.ErrBufferFull {
			continue
		}
		return buf, err
	}
}

// tailBuffer keeps the last stderrTail bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	buf []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - stderrTail; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}
