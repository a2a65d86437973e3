// Package config turns the environment and an optional .env file into the typed
// Config every binary of the bridge runs on. It is the only package that reads
// the process environment; everything else is handed a Config.
package config

import (
	"cmp"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/joho/godotenv"
)

// MinSecretLen is the shortest MCP_PATH_SECRET the daemon accepts.
const MinSecretLen = 16

// Defaults of the settings. Vars (and so .env.example and the README) and the
// parser both read them, and a package handed a zero limit falls back to the
// same value, so each default is written once.
const (
	DefaultHost               = "127.0.0.1"
	DefaultPort               = 8787
	DefaultRateLimitPerMinute = 60
	DefaultDeepSeekBaseURL    = "https://api.deepseek.com"
	DefaultModel              = "deepseek-flash"
	DefaultFlashTimeout       = 90 * time.Second
	DefaultMaxOutputTokens    = 4096
	DefaultLogLevel           = "info"
	// BRIDGE_HOST_APPROVALS values.
	HostApprovalsSocket    = "socket"
	HostApprovalsAll       = "all"
	HostApprovalsOff       = "off"
	DefaultMaxConcurrent   = 2
	DefaultMaxQueue        = 16
	DefaultMaxSteps        = 120
	DefaultJobTimeout      = 30 * time.Minute
	DefaultResultTTL       = 30 * time.Minute
	DefaultSyncWindow      = 45 * time.Second
	DefaultApprovalTimeout = 5 * time.Minute
	DefaultJobMaxCostUSD   = 1.00
	// A job's own bounds: a laptop survives a job at all three.
	DefaultJobMaxProcesses = 2048  // processes and threads
	DefaultJobMaxMemoryMB  = 4096  // resident, summed over the job's processes
	DefaultJobMaxDiskMB    = 10240 // its harness dir with its /tmp, and its overlay's upper dir
)

// DefaultApproveAllow is the built-in list of programs whose plain invocations
// run without a human (dangerous forms of them still go to a human).
var DefaultApproveAllow = []string{
	"ls", "cat", "head", "tail", "wc", "grep", "rg", "find", "tree", "pwd", "echo",
	"diff", "sort", "uniq", "file", "stat", "which", "true", "false", "test",
	"git", "go", "gofmt", "node", "npm", "python3", "python", "pytest", "make",
	"cargo", "rustc", "tsc", "mkdir", "touch", "cp", "mv", "sed", "awk",
}

// Config is every setting of the bridge. Durations are already parsed.
type Config struct {
	// EnvFile is the .env file that was read ("" when none was found).
	EnvFile string
	// MissingEnvFile is the explicitly named .env file (--env or
	// BRIDGE_ENV_FILE) that does not exist; only LoadMissingOK returns a
	// Config with it set (LoadFrom refuses).
	MissingEnvFile string
	// IgnoredLocalEnv is ./.env (absolute) when it exists but was not read:
	// only a file named by --env or BRIDGE_ENV_FILE is (LocalEnvNote says so).
	IgnoredLocalEnv string
	// origins is where each variable that is set came from: "env" (the
	// process environment, which wins) or "file" (EnvFile). Origin reads it.
	origins map[string]string

	APIKey     string // DEEPSEEK_API_KEY
	PathSecret string // MCP_PATH_SECRET
	Host       string // HOST
	Port       int    // PORT

	RateLimitPerMinute int // RATE_LIMIT_PER_MINUTE

	DeepSeekBaseURL  string        // DEEPSEEK_BASE_URL
	Model            string        // DEEPSEEK_MODEL
	Models           string        // DEEPSEEK_MODELS (parsed by deepseek.ParseModels; "" = the built-in list)
	FlashTimeout     time.Duration // DEEPSEEK_TIMEOUT_MS
	MaxOutputTokens  int           // DEEPSEEK_MAX_OUTPUT_TOKENS
	AnthropicBaseURL string        // BRIDGE_ANTHROPIC_BASE_URL (else DeepSeekBaseURL+"/anthropic")

	AllowedRoots []string // DEEPSEEK_ALLOWED_ROOTS (path-list separated, or by ";"); empty = deny all
	RuntimeRoots []string // BRIDGE_RUNTIME_ROOTS (separated like the roots): toolchains jobs see read-only
	// RootsSemicolon: a ";" separated the roots (the TypeScript bridge's
	// form), so a root whose name holds one was split (doctor says so).
	RootsSemicolon bool

	StateDir      string        // BRIDGE_STATE_DIR
	LogFile       string        // BRIDGE_LOG_FILE (default <state>/bridge.log when started by bridgectl)
	LogLevel      string        // BRIDGE_LOG_LEVEL
	MaxConcurrent int           // BRIDGE_MAX_CONCURRENT
	MaxQueue      int           // BRIDGE_MAX_QUEUE
	MaxSteps      int           // BRIDGE_MAX_STEPS
	JobTimeout    time.Duration // BRIDGE_JOB_TIMEOUT_MS
	ResultTTL     time.Duration // BRIDGE_RESULT_TTL_MS (never shorter than JobTimeout)
	SyncWindow    time.Duration // BRIDGE_SYNC_WINDOW_MS

	ClaudeBin       string        // BRIDGE_CLAUDE_BIN
	ApprovalTimeout time.Duration // BRIDGE_APPROVAL_TIMEOUT_MS
	ApproveAllow    []string      // BRIDGE_APPROVE_ALLOW (comma separated)
	CCApproval      bool          // BRIDGE_CC_APPROVAL (on unless "off")
	HostApprovals   string        // BRIDGE_HOST_APPROVALS: HostApprovalsSocket (default), HostApprovalsAll or HostApprovalsOff
	Sandbox         bool          // BRIDGE_SANDBOX (on unless "off")
	Overlay         bool          // BRIDGE_OVERLAY (on unless "off")

	JobMaxCostUSD   float64 // BRIDGE_JOB_MAX_COST_USD (0 = no ceiling)
	JobMaxTokens    int64   // BRIDGE_JOB_MAX_TOKENS (0 = no ceiling)
	DailyMaxCostUSD float64 // BRIDGE_DAILY_MAX_COST_USD (0 = off)

	JobMaxProcesses int // BRIDGE_JOB_MAX_PROCESSES (0 = none)
	JobMaxMemoryMB  int // BRIDGE_JOB_MAX_MEMORY_MB (0 = none)
	JobMaxDiskMB    int // BRIDGE_JOB_MAX_DISK_MB (0 = none)

	PolicyFloorFile string // BRIDGE_POLICY_FLOOR_FILE: the owner's job policy floor ("" = none)
	RequirePolicy   bool   // BRIDGE_REQUIRE_POLICY: a job without a policy is refused
	WorkspaceLock   bool   // BRIDGE_WORKSPACE_LOCK (on unless "off"): one live job per workspace

	CloudflaredBin string // BRIDGE_CLOUDFLARED_BIN

	DebugAddr string // BRIDGE_DEBUG_ADDR (loopback pprof listener; "" = off)

	// AllowedOrigins are browser origins (scheme://host[:port], lower
	// case) whose requests are served besides this machine's pages
	// (BRIDGE_ALLOWED_ORIGINS, comma separated).
	AllowedOrigins []string
	// Tools are the tools the bridge offers (BRIDGE_TOOLS): a profile
	// (all, flash, agent, review) or tool names, comma separated; nil = all.
	Tools []string
	// ResultBudget is the bytes an agent tool's result may weigh
	// (BRIDGE_RESULT_BUDGET; 0: each host's).
	ResultBudget int
}

// Var documents one environment variable; .env.example and `bridgectl doctor`
// are generated from and checked against this list.
type Var struct {
	Name, Default, Meaning string
}

// Lookup reads one variable. Tests pass a map-backed Lookup instead of the process env.
type Lookup func(name string) (string, bool)

// Load reads envFile ("" means BRIDGE_ENV_FILE, then the per-user file,
// DefaultEnvFile) and the process environment, which wins over the file. The
// file must exist when it is named (envFile or BRIDGE_ENV_FILE); the per-user
// file is optional.
func Load(envFile string) (Config, error) {
	return LoadFrom(envFile, os.LookupEnv)
}

// ErrNoEnvFile: the .env file named explicitly (--env or BRIDGE_ENV_FILE)
// does not exist.
var ErrNoEnvFile = errors.New("no such file")

// LoadFrom is Load with an injected environment. A .env file named explicitly
// (envFile, or BRIDGE_ENV_FILE) must exist: a missing one is a mistake the
// user wants to hear about (ErrNoEnvFile, with how to create it). The
// per-user default is optional.
func LoadFrom(envFile string, env Lookup) (Config, error) {
	c, err := LoadMissingOK(envFile, env)
	if err != nil {
		return Config{}, err
	}
	if c.MissingEnvFile != "" {
		return Config{}, noEnvFileError(c.MissingEnvFile, envFile, env)
	}
	return c, nil
}

// noEnvFileError says which setting named the missing file and how to create it.
func noEnvFileError(path, explicit string, env Lookup) error {
	if explicit != "" {
		return fmt.Errorf("env file %s: %w — `bridgectl --env %s secret` creates it with a new MCP_PATH_SECRET (add DEEPSEEK_API_KEY and the rest from .env.example), or fix the path", path, ErrNoEnvFile, path)
	}
	v, _ := env("BRIDGE_ENV_FILE")
	return fmt.Errorf("BRIDGE_ENV_FILE=%s: %w — `bridgectl secret` creates it with a new MCP_PATH_SECRET (add DEEPSEEK_API_KEY and the rest from .env.example), or fix the path, or unset BRIDGE_ENV_FILE to read %s", v, ErrNoEnvFile, DefaultEnvFile(env))
}

// LoadMissingOK is LoadFrom for the commands that create the .env file
// (bridgectl secret, rotate, allow) and for bridgectl doctor, which reports
// it: an explicitly named file that does not exist yet reads as empty and is
// named in Config.MissingEnvFile. Its directory must exist.
func LoadMissingOK(envFile string, env Lookup) (Config, error) {
	path := ResolveEnvFile(envFile, env)
	missing := ""
	fileVals := map[string]string{}
	if b, err := os.ReadFile(path); err == nil {
		vals, perr := godotenv.UnmarshalBytes(b)
		if perr != nil {
			// godotenv's error quotes the file's content (a secret or a key
			// near the mistake): say only where the mistake is.
			return Config{}, fmt.Errorf("read %s: not valid .env syntax near line %d (check quotes and variable names)", path, badLine(b))
		}
		fileVals = vals
		if abs, err := filepath.Abs(path); err == nil {
			path = abs
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return Config{}, fmt.Errorf("read env file %s: %w", path, err)
	} else if err := envFileDirExists(path, envFile, env); err != nil {
		return Config{}, err
	} else {
		if envFile != "" || bridgeEnvFileSet(env) {
			missing = path
			if abs, err := filepath.Abs(path); err == nil {
				missing = abs
			}
		}
		path = ""
	}
	origins := map[string]string{}
	get := func(name string) string {
		if v, ok := env(name); ok {
			origins[name] = "env"
			return strings.TrimSpace(v)
		}
		if v, ok := fileVals[name]; ok {
			origins[name] = "file"
			return strings.TrimSpace(v)
		}
		return ""
	}
	p := parser{get: get}
	c := Config{
		EnvFile:            path,
		origins:            origins,
		MissingEnvFile:     missing,
		IgnoredLocalEnv:    ignoredLocalEnv(path, missing),
		APIKey:             get("DEEPSEEK_API_KEY"),
		PathSecret:         get("MCP_PATH_SECRET"),
		Host:               p.str("HOST", DefaultHost),
		Port:               p.intv("PORT", DefaultPort, 0, 65535),
		RateLimitPerMinute: p.intv("RATE_LIMIT_PER_MINUTE", DefaultRateLimitPerMinute, 1, 1_000_000),
		DeepSeekBaseURL:    strings.TrimRight(p.str("DEEPSEEK_BASE_URL", DefaultDeepSeekBaseURL), "/"),
		Model:              p.str("DEEPSEEK_MODEL", DefaultModel),
		Models:             get("DEEPSEEK_MODELS"),
		FlashTimeout:       p.ms("DEEPSEEK_TIMEOUT_MS", DefaultFlashTimeout),
		MaxOutputTokens:    p.intv("DEEPSEEK_MAX_OUTPUT_TOKENS", DefaultMaxOutputTokens, 1, 400_000),
		AnthropicBaseURL:   strings.TrimRight(get("BRIDGE_ANTHROPIC_BASE_URL"), "/"),
		AllowedRoots:       splitRoots(get("DEEPSEEK_ALLOWED_ROOTS")),
		RuntimeRoots:       splitRoots(get("BRIDGE_RUNTIME_ROOTS")),
		RootsSemicolon:     strings.Contains(get("DEEPSEEK_ALLOWED_ROOTS")+get("BRIDGE_RUNTIME_ROOTS"), ";"),
		StateDir:           get("BRIDGE_STATE_DIR"),
		LogFile:            get("BRIDGE_LOG_FILE"),
		LogLevel:           p.str("BRIDGE_LOG_LEVEL", DefaultLogLevel),
		MaxConcurrent:      p.intv("BRIDGE_MAX_CONCURRENT", DefaultMaxConcurrent, 1, 64),
		MaxQueue:           p.intv("BRIDGE_MAX_QUEUE", DefaultMaxQueue, 0, 10_000),
		MaxSteps:           p.intv("BRIDGE_MAX_STEPS", DefaultMaxSteps, 1, 100_000),
		JobTimeout:         p.ms("BRIDGE_JOB_TIMEOUT_MS", DefaultJobTimeout),
		ResultTTL:          p.ms("BRIDGE_RESULT_TTL_MS", DefaultResultTTL),
		SyncWindow:         p.ms("BRIDGE_SYNC_WINDOW_MS", DefaultSyncWindow),
		ClaudeBin:          get("BRIDGE_CLAUDE_BIN"),
		ApprovalTimeout:    p.ms("BRIDGE_APPROVAL_TIMEOUT_MS", DefaultApprovalTimeout),
		ApproveAllow:       splitList(get("BRIDGE_APPROVE_ALLOW"), ","),
		CCApproval:         p.onOff("BRIDGE_CC_APPROVAL"),
		HostApprovals:      p.oneOf("BRIDGE_HOST_APPROVALS", HostApprovalsSocket, HostApprovalsSocket, HostApprovalsAll, HostApprovalsOff),
		Sandbox:            p.onOff("BRIDGE_SANDBOX"),
		Overlay:            p.onOff("BRIDGE_OVERLAY"),
		JobMaxCostUSD:      p.float("BRIDGE_JOB_MAX_COST_USD", DefaultJobMaxCostUSD),
		JobMaxTokens:       p.int64v("BRIDGE_JOB_MAX_TOKENS", 0, 0, 1<<62),
		DailyMaxCostUSD:    p.float("BRIDGE_DAILY_MAX_COST_USD", 0),
		JobMaxProcesses:    p.intv("BRIDGE_JOB_MAX_PROCESSES", DefaultJobMaxProcesses, 0, 1<<22),
		JobMaxMemoryMB:     p.intv("BRIDGE_JOB_MAX_MEMORY_MB", DefaultJobMaxMemoryMB, 0, 1<<30),
		JobMaxDiskMB:       p.intv("BRIDGE_JOB_MAX_DISK_MB", DefaultJobMaxDiskMB, 0, 1<<30),
		PolicyFloorFile:    get("BRIDGE_POLICY_FLOOR_FILE"),
		RequirePolicy:      p.offOn("BRIDGE_REQUIRE_POLICY"),
		WorkspaceLock:      p.onOff("BRIDGE_WORKSPACE_LOCK"),
		CloudflaredBin:     get("BRIDGE_CLOUDFLARED_BIN"),
		DebugAddr:          get("BRIDGE_DEBUG_ADDR"),
		AllowedOrigins:     splitList(get("BRIDGE_ALLOWED_ORIGINS"), ","),
		Tools:              splitList(get("BRIDGE_TOOLS"), ","),
		ResultBudget:       p.intv("BRIDGE_RESULT_BUDGET", 0, 0, 16<<20),
	}
	if p.err != nil {
		return Config{}, p.err
	}
	if len(c.ApproveAllow) == 0 {
		c.ApproveAllow = append([]string(nil), DefaultApproveAllow...)
	}
	if c.AnthropicBaseURL == "" {
		c.AnthropicBaseURL = c.DeepSeekBaseURL + "/anthropic"
	}
	if c.ResultTTL < c.JobTimeout {
		c.ResultTTL = c.JobTimeout
	}
	if c.StateDir == "" {
		c.StateDir = DefaultStateDir(env)
	}
	if abs, err := filepath.Abs(c.StateDir); err == nil {
		c.StateDir = abs
	}
	for i, r := range c.AllowedRoots {
		if abs, err := filepath.Abs(r); err == nil {
			c.AllowedRoots[i] = abs
		}
	}
	if c.PolicyFloorFile != "" {
		if abs, err := filepath.Abs(c.PolicyFloorFile); err == nil {
			c.PolicyFloorFile = abs
		}
	}
	for _, r := range c.RuntimeRoots {
		if !filepath.IsAbs(r) {
			return Config{}, fmt.Errorf("BRIDGE_RUNTIME_ROOTS: %q is not an absolute path", r)
		}
	}
	for i, o := range c.AllowedOrigins {
		norm, err := NormalizeOrigin(o)
		if err != nil {
			return Config{}, fmt.Errorf("BRIDGE_ALLOWED_ORIGINS: %w", err)
		}
		c.AllowedOrigins[i] = norm
	}
	return c, nil
}

// Addr is HOST:PORT.
func (c Config) Addr() string { return joinHostPort(c.Host, c.Port) }

// Origin says where variable name's value came from, for messages that tell
// the owner where to change it: "the environment", "<EnvFile>", or "" when it
// is the default.
func (c Config) Origin(name string) string {
	switch c.origins[name] {
	case "env":
		return "the environment"
	case "file":
		return c.EnvFile
	}
	return ""
}

// PortAdvice is how to pick another port, named after where PORT came from.
// envFile is where to set it when PORT is the default ("" names .env).
func (c Config) PortAdvice(envFile string) string {
	switch o := c.Origin("PORT"); o {
	case "":
		return fmt.Sprintf("PORT is the default %d: set another PORT in %s (PORT=0 picks a free port)", c.Port, cmp.Or(envFile, c.EnvFile, ".env"))
	case "the environment":
		return fmt.Sprintf("PORT=%d comes from the environment: unset it or set another (PORT=0 picks a free port)", c.Port)
	default:
		return fmt.Sprintf("PORT=%d is set in %s: change it there (PORT=0 picks a free port)", c.Port, o)
	}
}

func joinHostPort(h string, p int) string {
	if strings.Contains(h, ":") && !strings.HasPrefix(h, "[") {
		h = "[" + h + "]"
	}
	return h + ":" + strconv.Itoa(p)
}

// ErrBadSecret marks CheckSecret's errors: configuration the owner must fix
// (errors.Is), whoever checked it.
var ErrBadSecret = errors.New("MCP_PATH_SECRET cannot be served")

// ErrBadRuntimeRoot marks a BRIDGE_RUNTIME_ROOTS entry the daemon refuses at
// start (the guard checks them): configuration the owner must fix.
var ErrBadRuntimeRoot = errors.New("BRIDGE_RUNTIME_ROOTS")

// secretError is one of CheckSecret's errors; its text says the fix.
type secretError string

func (e secretError) Error() string        { return string(e) }
func (e secretError) Is(target error) bool { return target == ErrBadSecret }

// CheckSecret says why the path secret cannot be served, with the fix.
func (c Config) CheckSecret() error {
	switch {
	case c.PathSecret == "":
		return secretError("MCP_PATH_SECRET is not set: run `bridgectl secret` (or put 32+ random hex characters, e.g. from `openssl rand -hex 32`, into MCP_PATH_SECRET in .env)")
	case len(c.PathSecret) < MinSecretLen:
		return secretError(fmt.Sprintf("MCP_PATH_SECRET is %d characters, at least %d are required: run `bridgectl secret` (or `openssl rand -hex 32`)", len(c.PathSecret), MinSecretLen))
	case strings.ContainsAny(c.PathSecret, "/?#% "):
		return secretError("MCP_PATH_SECRET must be one URL path segment (no / ? # % or spaces): run `bridgectl secret`")
	}
	return nil
}

// Secrets lists the values that must never be printed (for log and output
// masking): the path secret, the API key and the userinfo (user:password) of
// a base URL that carries credentials.
func (c Config) Secrets() []string {
	var s []string
	for _, v := range []string{c.PathSecret, c.APIKey, userinfo(c.DeepSeekBaseURL), userinfo(c.AnthropicBaseURL)} {
		if v != "" && !slices.Contains(s, v) {
			s = append(s, v)
		}
	}
	return s
}

// userinfo is the "user:password" part of a URL as written ("" if it has none).
func userinfo(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.User == nil {
		return ""
	}
	_, rest, ok := strings.Cut(raw, "://")
	if !ok {
		return ""
	}
	info, _, ok := strings.Cut(rest, "@")
	if !ok || strings.ContainsAny(info, "/?#") {
		return ""
	}
	return info
}

// badLine finds the line of a .env file godotenv rejects: the line after the
// longest prefix of lines that still parses. It never returns content.
func badLine(b []byte) int {
	lines := strings.SplitAfter(string(b), "\n")
	const maxLines = 2000 // a longer file is parsed prefix by prefix only this far back
	lo := max(len(lines)-maxLines, 0)
	for n := len(lines) - 1; n >= lo; n-- {
		if _, err := godotenv.UnmarshalBytes([]byte(strings.Join(lines[:n], ""))); err == nil {
			return n + 1
		}
	}
	return lo + 1
}

func bridgeEnvFileSet(env Lookup) bool {
	v, ok := env("BRIDGE_ENV_FILE")
	return ok && v != ""
}

// envFileDirExists: an explicitly named .env file may not exist yet
// (bridgectl secret creates it), but a file in a directory that does not
// exist is a mistyped path.
func envFileDirExists(path, explicit string, env Lookup) error {
	if explicit == "" && !bridgeEnvFileSet(env) {
		return nil
	}
	dir := filepath.Dir(path)
	if fi, err := os.Stat(dir); err == nil && fi.IsDir() {
		return nil
	}
	if explicit != "" {
		return fmt.Errorf("env file %s: its directory %s does not exist (fix the path)", path, dir)
	}
	return fmt.Errorf("BRIDGE_ENV_FILE=%s: its directory %s does not exist (fix the path, or unset BRIDGE_ENV_FILE to read the per-user .env)", path, dir)
}
