package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// SystemDirs are the system paths every job sees read-only: programs,
// libraries and /etc (less SystemSecrets). A link among them (/bin → usr/bin
// on merged-/usr systems) is recreated as the same link. /opt is not among
// them: what is installed there is the owner's to name as a runtime root.
var SystemDirs = []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc"}

// SystemSecrets are files and dirs under SystemDirs that hold secrets: the
// password hashes, ssh host keys, sudo rules and TLS private keys. A job sees
// an empty file (or dir) in their place.
var SystemSecrets = []string{
	"/etc/shadow", "/etc/shadow-", "/etc/gshadow", "/etc/gshadow-",
	"/etc/security/opasswd", "/etc/sudoers", "/etc/sudoers.d", "/etc/ssl/private",
	"/etc/ssh/ssh_host_*_key",
	"/etc/krb5.keytab", "/etc/libvirt/secrets", "/etc/NetworkManager/system-connections",
	"/etc/wpa_supplicant", "/etc/ipsec.secrets", "/etc/ipsec.d/private", "/etc/ppp/chap-secrets", "/etc/ppp/pap-secrets",
	"/etc/wireguard", "/etc/letsencrypt", "/etc/pki/tls/private", "/etc/pki/*/private", "/etc/openvpn",
	"/etc/ssl/*.key", "/etc/cups/ssl", "/etc/postfix/sasl_passwd*", "/etc/docker/key.json", "/etc/rancher",
	"/etc/kubernetes", "/etc/credstore", "/etc/credstore.encrypted",
}

// JailOptions describe the filesystem view of one job's harness: what
// Claude Code itself, its file tools, the approval child and every command
// (inside Claude Code's own sandbox, nested) can see at all.
type JailOptions struct {
	// Bwrap is the absolute path of bubblewrap.
	Bwrap string
	// Workspace is the job's workspace, read-write unless WorkspaceReadOnly.
	Workspace string
	// WorkspaceReadOnly binds the workspace read-only (a job policy's
	// write_paths), with only WritableDirs (absolute, inside it) read-write.
	WorkspaceReadOnly bool
	WritableDirs      []string
	// BindFDs maps the workspace and writable dirs to the number of an open
	// descriptor of each (OpenDirNoSymlinks) that bubblewrap inherits: it
	// binds that descriptor (--bind-fd), not the path, so a path swapped
	// for a link after it was checked mounts nothing else. A path without
	// one is bound by path.
	BindFDs map[string]int
	// Merged, when set, is the job's overlay of the workspace (Overlay.Merged,
	// mounted before the jail starts): it is bound at the workspace's path
	// instead of the workspace, so every write lands in the overlay's upper
	// dir; WritableDirs are bound from it too.
	Merged string
	// MapUser maps the daemon's uid and gid back inside the jail
	// (--unshare-user --uid --gid): set when the jail starts as root of
	// the overlay's user namespace for a daemon that is not root.
	MapUser *[2]int
	// ConfigDir is the harness's HOME and config dir, read-write.
	ConfigDir string
	// Tmp is bound at /tmp, read-write: the job's private /tmp.
	Tmp string
	// ReadOnly are paths (files or dirs) bound read-only at the same place:
	// the harness binary's dir, the bridge binary, the owner's runtime roots.
	// They are bound after ReadWrite, so a read-only path inside a
	// read-write one stays read-only.
	ReadOnly []string
	// ReadWrite are further paths bound read-write. No job's plan sets any
	// today: the approval child asks the daemon over loopback, and nothing
	// of the state dir but the job's harness dir (ConfigDir) is in a jail.
	ReadWrite []string
	// Hide are paths inside the ReadOnly ones that the job must not see (a
	// credential store inside a runtime root): an empty file or dir covers
	// each.
	Hide []string
	// Env are variables set inside (bwrap --setenv), none by default.
	Env map[string]string
}

// JailArgs is the argv prefix that runs a command inside the job's view:
// a fresh mount namespace whose root holds only the system dirs, the
// workspace, the config dir, a private /tmp and the given paths. Its /proc
// is the one of the namespace bubblewrap starts in: a job's own, when the
// jail is started through ProcWrapArgs (the file tools are denied it anyway,
// and the commands get their own). The network is shared: the harness
// reaches the bridge's model proxy on loopback, and Claude Code's own
// sandbox takes the network from its commands. It ends in "--": append the
// command.
func JailArgs(o JailOptions) ([]string, error) {
	if !filepath.IsAbs(o.Bwrap) {
		return nil, fmt.Errorf("jail: bubblewrap path %q is not absolute", o.Bwrap)
	}
	for _, p := range []string{o.Workspace, o.ConfigDir, o.Tmp} {
		if !filepath.IsAbs(p) {
			return nil, fmt.Errorf("jail: %q is not an absolute path", p)
		}
	}
	args := []string{o.Bwrap, "--die-with-parent", "--unshare-ipc", "--unshare-uts",
		// The /proc bubblewrap starts with, the job's own PID namespace's
		// when its wrapper (ProcMain, OverlayMain) made one. Not
		// bubblewrap's --proc: bubblewrap mounts over parts of the one it
		// makes, and the kernel then refuses Claude Code's own nested
		// sandbox the fresh /proc (and --disable-userns) its commands get.
		"--bind", "/proc", "/proc", "--dev", "/dev"}
	if o.MapUser != nil {
		args = append(args, "--unshare-user", "--uid", strconv.Itoa(o.MapUser[0]), "--gid", strconv.Itoa(o.MapUser[1]))
	}
	for _, d := range SystemDirs {
		st, err := os.Lstat(d)
		switch {
		case err != nil:
			continue
		case st.Mode()&os.ModeSymlink != 0:
			target, err := os.Readlink(d)
			if err != nil {
				return nil, fmt.Errorf("jail: %w", err)
			}
			args = append(args, "--symlink", target, d)
		case st.IsDir():
			args = append(args, "--ro-bind", d, d)
		}
	}
	hidden, err := systemSecrets()
	if err != nil {
		return nil, err
	}
	for _, s := range hidden {
		if s.dir {
			args = append(args, "--tmpfs", s.path, "--remount-ro", s.path)
		} else {
			args = append(args, "--ro-bind", os.DevNull, s.path)
		}
	}
	wsBind := "--bind"
	if o.WorkspaceReadOnly {
		wsBind = "--ro-bind"
	}
	args = append(args, "--bind", o.Tmp, "/tmp",
		"--bind", o.ConfigDir, o.ConfigDir)
	args = append(args, o.bind(wsBind, o.Workspace)...)
	if o.WorkspaceReadOnly {
		for _, d := range o.WritableDirs {
			if !within(d, o.Workspace) || d == o.Workspace {
				return nil, fmt.Errorf("jail: writable dir %q is not inside the workspace %q", d, o.Workspace)
			}
			args = append(args, o.bind("--bind", d)...)
		}
	}
	for _, p := range o.ReadWrite {
		args = append(args, "--bind", p, p)
	}
	for _, p := range o.ReadOnly {
		args = append(args, "--ro-bind", p, p)
	}
	for _, p := range o.Hide {
		st, err := os.Stat(p)
		switch {
		case err != nil:
			continue
		case st.IsDir():
			args = append(args, "--tmpfs", p, "--remount-ro", p)
		default:
			args = append(args, "--ro-bind", os.DevNull, p)
		}
	}
	keys := make([]string, 0, len(o.Env))
	for k := range o.Env {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		args = append(args, "--setenv", k, o.Env[k])
	}
	return append(args, "--chdir", o.Workspace, "--"), nil
}

// bind is kind ("--bind" or "--ro-bind") of p onto itself: of its
// descriptor when BindFDs has one, of its place in the overlay when the
// workspace is one.
func (o JailOptions) bind(kind, p string) []string {
	if o.Merged != "" {
		if p == o.Workspace {
			return []string{kind, o.Merged, p}
		}
		if within(p, o.Workspace) {
			return []string{kind, filepath.Join(o.Merged, strings.TrimPrefix(p, o.Workspace+"/")), p}
		}
	}
	if fd, ok := o.BindFDs[p]; ok {
		return []string{kind + "-fd", strconv.Itoa(fd), p}
	}
	return []string{kind, p, p}
}

type hiddenPath struct {
	path string
	dir  bool
}

// systemSecrets expands SystemSecrets to what exists here, links resolved
// to where they point inside the system dirs (a bind over a link would bind
// its target anyway; hiding the target hides every name for it).
func systemSecrets() ([]hiddenPath, error) {
	var out []hiddenPath
	seen := map[string]bool{}
	for _, pat := range SystemSecrets {
		matches, err := filepath.Glob(pat)
		if err != nil {
			return nil, fmt.Errorf("jail: %w", err)
		}
		for _, m := range matches {
			real, err := filepath.EvalSymlinks(m)
			if err != nil {
				if errors.Is(err, os.ErrNotExist) {
					continue
				}
				return nil, fmt.Errorf("jail: %w", err)
			}
			if !underSystemDirs(real) || seen[real] {
				continue
			}
			seen[real] = true
			st, err := os.Stat(real)
			if err != nil {
				continue
			}
			out = append(out, hiddenPath{path: real, dir: st.IsDir()})
		}
	}
	return out, nil
}

func underSystemDirs(p string) bool {
	for _, d := range SystemDirs {
		if p == d || strings.HasPrefix(p, d+"/") {
			return true
		}
	}
	return false
}
