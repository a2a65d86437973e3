package cli

import (
	"errors"
	"fmt"
	"os"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/statedir"
)

// The pid files and records bridgectl reads (bridge.pid, daemon.json,
// tunnel.pid, tunnel.json) may outlive their process, and the pid may then
// name another one. bridgectl signals a pid only when it proves it is this
// state dir's daemon or the tunnel it started; any other pid is stale: said,
// and left alone.

// daemonProc is daemon without the /health probe: who the daemon is and its
// daemon.json. The daemon is the process holding the state dir's lock (only
// `bridge serve` takes it); when the lock cannot be read, the process
// daemon.json describes, if the pid still has its start time and
// executable. A pid in bridge.pid or daemon.json that is neither is stale.
func (c *ctl) daemonProc() daemonStatus {
	var s daemonStatus
	pidFile, _ := readPID(c.dir.PIDFile())
	var info daemonInfo
	infoErr := statedir.ReadJSON(c.dir.DaemonInfoFile(), &info)
	if infoErr == nil && info.PID <= 0 {
		infoErr = errors.New("it names no pid")
	}
	holder, lockErr := c.dir.LockHolder()
	recorded := statedir.Process{PID: info.PID, Exe: info.Exe, Start: info.ProcStart}
	switch {
	case holder != 0:
		s.PID = holder
		if p, err := statedir.Identify(holder); err == nil {
			s.Proc = p
		} else {
			s.Proc = statedir.Process{PID: holder}
		}
		switch {
		case infoErr == nil && info.PID == holder && (info.ProcStart == "" || recorded.Check() == nil):
			s.Info = &info
		case infoErr == nil:
			s.InfoNote = fmt.Sprintf("%s describes another process (pid %d), not the running daemon: it is left from an earlier daemon", c.dir.DaemonInfoFile(), info.PID)
		case errors.Is(infoErr, os.ErrNotExist):
			s.InfoNote = "it has not written " + c.dir.DaemonInfoFile() + " (yet): its address is taken from the config"
		default:
			s.InfoNote = fmt.Sprintf("%s is damaged (%v): its address is taken from the config", c.dir.DaemonInfoFile(), errText(infoErr))
		}
	case lockErr != nil && infoErr == nil && info.ProcStart != "" && alive(recorded):
		s.PID, s.Proc, s.Info = info.PID, recorded, &info
		s.InfoNote = fmt.Sprintf("the state dir's lock could not be read (%v): the daemon is known by daemon.json's pid, start time and executable", lockErr)
	}
	// What the files name that is not the daemon.
	for _, cand := range []struct {
		pid  int
		file string
	}{{pidFile, c.dir.PIDFile()}, {info.PID, c.dir.DaemonInfoFile()}} {
		if cand.pid <= 0 || cand.pid == s.PID || s.StalePID != 0 {
			continue
		}
		s.StalePID = cand.pid
		switch {
		case !pidAlive(cand.pid):
			s.StaleNote = fmt.Sprintf("%s names pid %d, which is gone", cand.file, cand.pid)
		case s.PID != 0:
			s.StaleNote = fmt.Sprintf("%s names pid %d, a live process that is not the daemon (pid %d holds the state dir's lock): stale, left alone", cand.file, cand.pid, s.PID)
		default:
			s.StaleNote = fmt.Sprintf("%s names pid %d, a live process that is not this state dir's daemon (it does not hold %s): stale, left alone", cand.file, cand.pid, c.dir.LockFile())
		}
	}
	if s.Info != nil {
		s.Addr = dialAddr(info.Addr)
	} else {
		s.Addr = dialAddr(c.cfg.Addr())
	}
	return s
}

// tunnel reads tunnel.pid and tunnel.json. The tunnel is the cloudflared
// bridgectl started only while the pid tunnel.json records still has the
// start time (and executable) recorded with it; otherwise the pid is stale.
func (c *ctl) tunnel() tunnelStatus {
	var t tunnelStatus
	pidFile, _ := readPID(c.dir.TunnelPIDFile())
	var info tunnelInfo
	if err := statedir.ReadJSON(c.dir.TunnelInfoFile(), &info); err == nil {
		t.Info = &info
	}
	pid, file := pidFile, c.dir.TunnelPIDFile()
	if t.Info != nil && info.PID > 0 {
		pid, file = info.PID, c.dir.TunnelInfoFile()
	}
	if pid <= 0 {
		return t
	}
	rec := statedir.Process{PID: pid}
	if t.Info != nil && info.PID == pid {
		rec.Exe, rec.Start = info.Exe, info.ProcStart
	}
	err := rec.Check()
	switch {
	case err == nil:
		t.PID, t.Proc = pid, rec
		if pidFile > 0 && pidFile != pid {
			t.StalePID = pidFile
			t.StaleNote = fmt.Sprintf("%s names pid %d, not the tunnel (pid %d): stale, left alone", c.dir.TunnelPIDFile(), pidFile, pid)
		}
		return t
	case !pidAlive(pid):
		t.StaleNote = fmt.Sprintf("%s names pid %d, which is gone", file, pid)
	case errors.Is(err, statedir.ErrNoIdentity):
		t.StaleNote = fmt.Sprintf("%s names pid %d, which bridgectl cannot tell apart from another process (no start time recorded with it): left alone — stop it yourself if it is cloudflared", file, pid)
	default:
		t.StaleNote = fmt.Sprintf("%s names pid %d, a live process that is not the cloudflared bridgectl started (%v): stale, left alone", file, pid, err)
	}
	t.StalePID = pid
	return t
}

// errText is an error without the path the caller has named already.
func errText(err error) string {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}
