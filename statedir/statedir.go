// Package statedir owns the layout of the bridge's state directory — the contract
// between the daemon, the approval child and bridgectl — and its atomic writes.
// Formats of the files it names are documented in docs/STATE.md.
package statedir

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
)

// FormatVersion is written into every JSON file the bridge keeps in the state dir.
const FormatVersion = 1

// Dir is a state directory. Its zero value is not usable; use Open, or At to
// only read.
type Dir struct{ Root string }

// At names the state directory at root (made absolute) without touching the
// filesystem: for readers, which must not create it or change its mode
// (bridgectl status, jobs, logs, ... on a machine where the bridge never ran).
// Writers use Open.
func At(root string) (Dir, error) {
	if root == "" {
		return Dir{}, fmt.Errorf("state dir is empty: set BRIDGE_STATE_DIR")
	}
	abs, err := filepath.Abs(root)
	if err != nil {
		return Dir{}, fmt.Errorf("state dir %s: %w", root, err)
	}
	return Dir{Root: abs}, nil
}

// Exists reports whether the state directory is there (and is a directory).
func (d Dir) Exists() bool {
	fi, err := os.Stat(d.Root)
	return err == nil && fi.IsDir()
}

// Open makes sure root exists with mode 0700 (tightening it if it is looser)
// and returns the Dir.
func Open(root string) (Dir, error) {
	d, err := At(root)
	if err != nil {
		return Dir{}, err
	}
	for _, sub := range []string{d.Root, d.Jobs(), d.Approvals(), d.HarnessRoot(), d.Switches()} {
		if err := os.MkdirAll(sub, 0o700); err != nil {
			return Dir{}, fmt.Errorf("create state dir: %w", err)
		}
		if err := os.Chmod(sub, 0o700); err != nil {
			return Dir{}, fmt.Errorf("chmod state dir: %w", err)
		}
	}
	return d, nil
}

// Jobs holds one snapshot per job: jobs/<id>.json.
func (d Dir) Jobs() string { return filepath.Join(d.Root, "jobs") }

// JobFile is the snapshot of one job.
func (d Dir) JobFile(id string) string { return filepath.Join(d.Jobs(), id+".json") }

// Approvals holds pending requests (<id>.request.json) and decisions (<id>.decision.json).
func (d Dir) Approvals() string { return filepath.Join(d.Root, "approvals") }

// LedgerRoot holds one directory per job with its ledger, which the
// daemon's approval service writes and no job's jail holds.
func (d Dir) LedgerRoot() string { return filepath.Join(d.Root, "ledgers") }

// LedgerDir is the directory of one job's ledger.
func (d Dir) LedgerDir(jobID string) string { return filepath.Join(d.LedgerRoot(), jobID) }

// LedgerFile is one job's ledger: a policy.Verdict per line.
func (d Dir) LedgerFile(jobID string) string {
	return filepath.Join(d.LedgerDir(jobID), "ledger.jsonl")
}

// HarnessRoot holds one private directory per job (config dir, settings, approval config).
func (d Dir) HarnessRoot() string { return filepath.Join(d.Root, "harness") }

// HarnessDir is the private directory of one job's harness.
func (d Dir) HarnessDir(jobID string) string { return filepath.Join(d.HarnessRoot(), jobID) }

// ChangesRoot holds one directory per job with the record of its workspace
// at its start and the whole diff of what it changed (package changes); no
// job's jail shows it.
func (d Dir) ChangesRoot() string { return filepath.Join(d.Root, "changes") }

// ChangesDir is one job's changes directory.
func (d Dir) ChangesDir(jobID string) string { return filepath.Join(d.ChangesRoot(), jobID) }

// OwnerTokenFile holds the token with which bridgectl tells the daemon a
// call is the owner's (`bridgectl job kill`), written at each boot. No
// job's jail shows it.
func (d Dir) OwnerTokenFile() string { return filepath.Join(d.Root, "owner.token") }

// AuditLog is the JSONL audit log of approvals.
func (d Dir) AuditLog() string { return filepath.Join(d.Root, "audit.log") }

// Switches holds the flags a job's approval child reads at every request;
// the job's jail binds it read-only, so nothing in a job can set one.
func (d Dir) Switches() string { return filepath.Join(d.Root, "switches") }

// AuditUnwritten, when present, says audit records could not be written
// (a full or read-only state dir): the requests they would have recorded
// were denied. It lives in approvals/, which the approval child can write;
// the next record that is written says so in the log and removes it.
func (d Dir) AuditUnwritten() string { return filepath.Join(d.Approvals(), "audit-unwritten") }

// ApprovalOffFlag, when present, turns human approval off until the daemon's next boot.
func (d Dir) ApprovalOffFlag() string { return filepath.Join(d.Switches(), "approval-off") }

// DisabledFlag, when present, makes `bridgectl start` refuse.
func (d Dir) DisabledFlag() string { return filepath.Join(d.Root, "disabled") }

// PIDFile, LogFile: the daemon's; TunnelPIDFile, TunnelLogFile: cloudflared's.
func (d Dir) PIDFile() string       { return filepath.Join(d.Root, "bridge.pid") }
func (d Dir) LogFile() string       { return filepath.Join(d.Root, "bridge.log") }
func (d Dir) TunnelPIDFile() string { return filepath.Join(d.Root, "tunnel.pid") }
func (d Dir) TunnelLogFile() string { return filepath.Join(d.Root, "tunnel.log") }

// TunnelTokenFile holds a named tunnel's token (mode 0600).
func (d Dir) TunnelTokenFile() string { return filepath.Join(d.Root, "tunnel.token") }

// TunnelInfoFile records the running tunnel's kind and public URL.
func (d Dir) TunnelInfoFile() string { return filepath.Join(d.Root, "tunnel.json") }

// DaemonInfoFile is written by `bridge serve` once it listens: pid, address, harness, sandbox.
func (d Dir) DaemonInfoFile() string { return filepath.Join(d.Root, "daemon.json") }

// SocketFile is the daemon's unix socket (mode 0600, in this 0700 dir): the
// same MCP endpoint as the HTTP one, without the path secret — the file's
// permissions are the credential. `bridge stdio` and bridgectl connect to it.
func (d Dir) SocketFile() string { return filepath.Join(d.Root, "daemon.sock") }

// SpendFile is the model proxy's total of all jobs on one UTC day
// (day is YYYY-MM-DD): spend-YYYY-MM-DD.json, read back at start so
// BRIDGE_DAILY_MAX_COST_USD survives a restart.
func (d Dir) SpendFile(day string) string { return filepath.Join(d.Root, "spend-"+day+".json") }

// WriteFileAtomic writes data to path with mode 0600: temp file in the same
// directory, fsync, rename, so readers see the old or the new file, never half.
func WriteFileAtomic(path string, data []byte) error { return writeAtomic(path, data, true) }

// WriteFileAtomicNoSync is WriteFileAtomic without the fsync: still never
// half a file for a reader, but a power loss may leave the old one or an
// empty one. For files that are rewritten before every use anyway (a job's
// harness files), where an fsync per file only slows every spawn down.
func WriteFileAtomicNoSync(path string, data []byte) error { return writeAtomic(path, data, false) }

func writeAtomic(path string, data []byte, sync bool) error {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	tmp := f.Name()
	cleanup := func(err error) error {
		f.Close()
		os.Remove(tmp)
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Chmod(0o600); err != nil {
		return cleanup(err)
	}
	if _, err := f.Write(data); err != nil {
		return cleanup(err)
	}
	if sync {
		if err := f.Sync(); err != nil {
			return cleanup(err)
		}
	}
	if err := f.Close(); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// WriteJSON marshals v (indented) and writes it atomically with mode 0600.
func WriteJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("encode %s: %w", filepath.Base(path), err)
	}
	return WriteFileAtomic(path, append(b, '\n'))
}

// ReadJSON reads path into v.
func ReadJSON(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("decode %s: %w", path, err)
	}
	return nil
}

// AppendLine appends one line (a JSON record plus newline) to path, creating
// it with mode 0600, whole or not at all: under an exclusive lock on the file
// (so appenders in other processes wait), one write of the whole line, then
// fsync; if either fails — a full or failing disk — the file is cut back to
// the length it had, so no torn line stays behind. A line left unterminated
// by an older writer is ended first, so the record is a line of its own.
func AppendLine(path string, line []byte) error {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("append %s: %w", path, err)
	}
	defer f.Close()
	if err := lockWait(f); err != nil {
		return fmt.Errorf("append %s: lock: %w", path, err)
	}
	defer unlock(f)
	fi, err := f.Stat()
	if err != nil {
		return fmt.Errorf("append %s: %w", path, err)
	}
	size := fi.Size()
	rec := make([]byte, 0, len(line)+2)
	if size > 0 {
		last := make([]byte, 1)
		if _, err := f.ReadAt(last, size-1); err != nil {
			return fmt.Errorf("append %s: %w", path, err)
		}
		if last[0] != '\n' {
			rec = append(rec, '\n')
		}
	}
	rec = append(rec, line...)
	if len(rec) == 0 || rec[len(rec)-1] != '\n' {
		rec = append(rec, '\n')
	}
	_, werr := f.Write(rec)
	if werr == nil {
		werr = f.Sync()
	}
	if werr == nil {
		return nil
	}
	if terr := f.Truncate(size); terr != nil {
		return fmt.Errorf("append %s: %w; and cutting back the part written failed: %v", path, werr, terr)
	}
	return fmt.Errorf("append %s: %w", path, werr)
}

// Space says how much room the state dir's filesystem has left for the
// daemon's user, and whether it is mounted read-only: a full or read-only
// state dir can record nothing (audit records, job snapshots).
func (d Dir) Space() (free uint64, readOnly bool, err error) { return space(d.Root) }
