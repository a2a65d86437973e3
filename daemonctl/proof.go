package daemonctl

import (
	"errors"
	"fmt"
	"os"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/statedir"
)

// The pid files and records (bridge.pid, daemon.json, tunnel.pid,
// tunnel.json) may outlive their process, and the pid may then name another
// one. A pid is signalled only once it is proved to be this state dir's
// daemon or the tunnel bridgectl started; any other pid is stale: said, and
// left alone.

// Find is who the daemon is and its daemon.json, without asking it. The
// daemon is the process holding the state dir's lock (only `bridge serve`
// takes it); when the lock cannot be read, the process daemon.json
// describes, if the pid still has its start time and executable. A pid in
// bridge.pid or daemon.json that is neither is stale.
func (c *Controller) Find() Status {
	var s Status
	pidFile, _ := ReadPID(c.Dir.PIDFile())
	var info statedir.DaemonInfo
	infoErr := statedir.ReadJSON(c.Dir.DaemonInfoFile(), &info)
	if infoErr == nil && info.PID <= 0 {
		infoErr = errors.New("it names no pid")
	}
	holder, lockErr := c.Dir.LockHolder()
	recorded := info.Process()
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
			s.InfoNote = fmt.Sprintf("%s describes another process (pid %d), not the running daemon: it is left from an earlier daemon", c.Dir.DaemonInfoFile(), info.PID)
		case errors.Is(infoErr, os.ErrNotExist):
			s.InfoNote = "it has not written " + c.Dir.DaemonInfoFile() + " (yet): its address is taken from the config"
		default:
			s.InfoNote = fmt.Sprintf("%s is damaged (%v): its address is taken from the config", c.Dir.DaemonInfoFile(), errText(infoErr))
		}
	case lockErr != nil && infoErr == nil && info.ProcStart != "" && Alive(recorded):
		s.PID, s.Proc, s.Info = info.PID, recorded, &info
		s.InfoNote = fmt.Sprintf("the state dir's lock could not be read (%v): the daemon is known by daemon.json's pid, start time and executable", lockErr)
	}
	// What the files name that is not the daemon.
	for _, cand := range []struct {
		pid  int
		file string
	}{{pidFile, c.Dir.PIDFile()}, {info.PID, c.Dir.DaemonInfoFile()}} {
		if cand.pid <= 0 || cand.pid == s.PID || s.StalePID != 0 {
			continue
		}
		s.StalePID = cand.pid
		switch {
		case !PIDAlive(cand.pid):
			s.StaleNote = fmt.Sprintf("%s names pid %d, which is gone", cand.file, cand.pid)
		case s.PID != 0:
			s.StaleNote = fmt.Sprintf("%s names pid %d, a live process that is not the daemon (pid %d holds the state dir's lock): stale, left alone", cand.file, cand.pid, s.PID)
		default:
			s.StaleNote = fmt.Sprintf("%s names pid %d, a live process that is not this state dir's daemon (it does not hold %s): stale, left alone", cand.file, cand.pid, c.Dir.LockFile())
		}
	}
	if s.Info != nil {
		s.Addr = DialAddr(info.Addr)
	} else {
		s.Addr = DialAddr(c.Config.Addr())
	}
	return s
}

// TunnelStatus is what can be told about the tunnel bridgectl started.
type TunnelStatus struct {
	PID       int              // the cloudflared bridgectl started, proved (Tunnel); 0: none
	Proc      statedir.Process // what names it beyond its pid, for the signals
	StalePID  int              // a recorded pid that is not it
	StaleNote string           // what StalePID is, in words
	Info      *statedir.TunnelInfo
}

// Tunnel reads tunnel.pid and tunnel.json. The tunnel is the cloudflared
// bridgectl started only while the pid tunnel.json records still has the
// start time (and executable) recorded with it; otherwise the pid is stale.
func (c *Controller) Tunnel() TunnelStatus {
	var t TunnelStatus
	pidFile, _ := ReadPID(c.Dir.TunnelPIDFile())
	var info statedir.TunnelInfo
	if err := statedir.ReadJSON(c.Dir.TunnelInfoFile(), &info); err == nil {
		t.Info = &info
	}
	pid, file := pidFile, c.Dir.TunnelPIDFile()
	if t.Info != nil && info.PID > 0 {
		pid, file = info.PID, c.Dir.TunnelInfoFile()
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
			t.StaleNote = fmt.Sprintf("%s names pid %d, not the tunnel (pid %d): stale, left alone", c.Dir.TunnelPIDFile(), pidFile, pid)
		}
		return t
	case !PIDAlive(pid):
		t.StaleNote = fmt.Sprintf("%s names pid %d, which is gone", file, pid)
	case errors.Is(err, statedir.ErrNoIdentity):
		t.StaleNote = fmt.Sprintf("%s names pid %d, which bridgectl cannot tell apart from another process (no start time recorded with it): left alone — stop it yourself if it is cloudflared", file, pid)
	default:
		t.StaleNote = fmt.Sprintf("%s names pid %d, a live process that is not the cloudflared bridgectl started (%v): stale, left alone", file, pid, err)
	}
	t.StalePID = pid
	return t
}
