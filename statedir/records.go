package statedir

// The records of the state dir's long-lived processes. Each file has one type,
// here, shared by whoever writes it and whoever reads it, so the two cannot
// drift (docs/STATE.md describes the fields).

// DaemonInfo is <state>/daemon.json (DaemonInfoFile): written by `bridge
// serve` (package daemon) once it listens and removed when serving ends;
// bridgectl, `bridge stdio` (package daemonctl) and the tests read it.
// Fields a reader may find missing (an older daemon, a damaged file) are
// pointers or say what their zero value means.
type DaemonInfo struct {
	Version   int    `json:"version"`
	PID       int    `json:"pid"`
	Addr      string `json:"addr"`
	StartedAt string `json:"started_at,omitempty"` // RFC 3339, whole seconds
	// Harness is what runs agent jobs; nil when the daemon did not say.
	Harness *DaemonHarness `json:"harness,omitempty"`
	// Sandbox is "on", "off" or "unavailable"; Approval "on" or "off" — the
	// modes the daemon booted with ("" when it did not say).
	Sandbox  string `json:"sandbox,omitempty"`
	Approval string `json:"approval,omitempty"`
	// Record is how jobs' changes are recorded: "exact (overlay)", or
	// "walk: " and why no overlay can be had ("" when it did not say).
	Record string `json:"record,omitempty"`
	// PolicyFloor is the job policy floor file read at start, or "none".
	PolicyFloor string `json:"policy_floor,omitempty"`
	// Path is the daemon's PATH, so bridgectl can warn about an allowed root
	// that holds one of its directories.
	Path string `json:"path,omitempty"`
	// Exe and ProcStart name the daemon's process beyond its pid (Process):
	// it is signalled only while it holds the state dir's lock and still
	// has them, never a process that reuses the pid.
	Exe       string `json:"exe,omitempty"`
	ProcStart string `json:"proc_start,omitempty"`
	// Socket is the unix socket serving MCP without the path secret ("" when
	// it could not be made: the log says why).
	Socket string `json:"socket,omitempty"`
	// DeepSeekBaseURL is the API the daemon calls, DeepSeekBaseURLFrom where
	// that came from: "the environment", the .env file's path, or "default"
	// ("" when the daemon did not say).
	DeepSeekBaseURL     string `json:"deepseek_base_url,omitempty"`
	DeepSeekBaseURLFrom string `json:"deepseek_base_url_from,omitempty"`
	// SecretReload: the socket serves POST /secret/reload, so a new
	// MCP_PATH_SECRET takes effect without a restart (`bridgectl rotate`).
	SecretReload bool `json:"secret_reload,omitempty"`
	// EnvFile is the .env the daemon was started with ("" when none: the
	// environment alone); bridgectl acts on this file from any directory.
	EnvFile string `json:"env_file,omitempty"`
	// AllowedRoots are the roots the daemon admits workspaces in. The daemon
	// always writes the list ([] for none); nil when read means the daemon
	// did not say (an older one).
	AllowedRoots []string `json:"allowed_roots"`
}

// Process is the daemon's process as the record names it.
func (i DaemonInfo) Process() Process {
	return Process{PID: i.PID, Exe: i.Exe, Start: i.ProcStart}
}

// DaemonHarness is daemon.json's "harness": the agent jobs' harness binary
// and the model proxy they call.
type DaemonHarness struct {
	Kind      string `json:"kind"`
	Bin       string `json:"bin,omitempty"`
	Available bool   `json:"available"`
	Error     string `json:"error,omitempty"`
	// ModelProxy is the loopback address of the model proxy the jobs call.
	ModelProxy string `json:"model_proxy,omitempty"`
}

// TunnelInfo is <state>/tunnel.json (TunnelInfoFile), written by bridgectl
// once the cloudflared it started is up.
type TunnelInfo struct {
	Version   int    `json:"version"`
	Kind      string `json:"kind"` // quick | named
	URL       string `json:"url"`  // https://HOST (no path)
	Hostname  string `json:"hostname,omitempty"`
	PID       int    `json:"pid"`
	Origin    string `json:"origin"` // http://127.0.0.1:PORT
	StartedAt string `json:"started_at"`
	// Exe and ProcStart name the cloudflared process beyond its pid
	// (Process), read when bridgectl started it.
	Exe       string `json:"exe,omitempty"`
	ProcStart string `json:"proc_start,omitempty"`
}
