package prompt

import (
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/approvals"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/approvals/rules"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/policy"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/statedir"
)

// Config is how the daemon answers one job's tool calls: the rules' inputs,
// the job's policy, its ledger. The daemon holds it in memory (Service); a
// job never sees it, and nothing the job controls changes it. WriteConfig
// and LoadConfig keep one as a file, for tests and tools.
type Config struct {
	JobID        string
	Workspace    string
	StateDir     string
	Allow        []string
	Protected    []string
	Timeout      time.Duration
	ApprovalMode string // approvals.ModeOn (default) or approvals.ModeOff
	// Policy is the job's enforced policy (nil: none), which narrows the rules.
	Policy *policy.Enforced
	// Ledger is the file the child appends each tool call's verdict to
	// (policy.Verdict lines; "" writes none): the job's ledger.
	Ledger string
	// Jailed is true when the job runs in the OS jail, which holds its
	// write_paths for commands (rules.Policy.Jailed).
	Jailed bool
}

type configFile struct {
	Version      int              `json:"version"`
	JobID        string           `json:"job_id"`
	Workspace    string           `json:"workspace"`
	StateDir     string           `json:"state_dir"`
	Allow        []string         `json:"allow"`
	Protected    []string         `json:"protected"`
	TimeoutMS    int64            `json:"timeout_ms"`
	ApprovalMode string           `json:"approval_mode"`
	Policy       *policy.Enforced `json:"policy,omitempty"`
	Ledger       string           `json:"ledger,omitempty"`
	Jailed       bool             `json:"jailed,omitempty"`
}

// WriteConfig validates cfg and writes it atomically with mode 0600, without
// an fsync: the file is written anew for every job, read by that job's
// approval child through the page cache, and useless after a power loss,
// which ends the job (a restart marks it interrupted; no approval child of
// it runs again). A job's spawn waited for this fsync (docs/PERFORMANCE.md).
func WriteConfig(path string, cfg Config) error {
	if err := cfg.validate(); err != nil {
		return err
	}
	b, err := json.MarshalIndent(configFile{
		Version: statedir.FormatVersion, JobID: cfg.JobID, Workspace: cfg.Workspace, StateDir: cfg.StateDir,
		Allow: cfg.Allow, Protected: cfg.Protected, TimeoutMS: cfg.Timeout.Milliseconds(), ApprovalMode: cfg.mode(),
		Policy: cfg.Policy, Ledger: cfg.Ledger, Jailed: cfg.Jailed,
	}, "", "  ")
	if err != nil {
		return fmt.Errorf("encode %s: %w", filepath.Base(path), err)
	}
	return statedir.WriteFileAtomicNoSync(path, append(b, '\n'))
}

// LoadConfig reads and validates a Config written by WriteConfig.
func LoadConfig(path string) (Config, error) {
	var f configFile
	if err := statedir.ReadJSON(path, &f); err != nil {
		return Config{}, fmt.Errorf("approval config: %w", err)
	}
	if f.Version != statedir.FormatVersion {
		return Config{}, fmt.Errorf("approval config %s: version %d, want %d", path, f.Version, statedir.FormatVersion)
	}
	cfg := Config{JobID: f.JobID, Workspace: f.Workspace, StateDir: f.StateDir, Allow: f.Allow,
		Protected: f.Protected, Timeout: time.Duration(f.TimeoutMS) * time.Millisecond, ApprovalMode: f.ApprovalMode,
		Policy: f.Policy, Ledger: f.Ledger, Jailed: f.Jailed}
	if err := cfg.validate(); err != nil {
		return Config{}, fmt.Errorf("approval config %s: %w", path, err)
	}
	return cfg, nil
}

// rules is what the rules measure the job's calls against.
func (c Config) rules() rules.Policy {
	return rules.Policy{Workspace: c.Workspace, Allow: c.Allow, Protected: c.Protected, Job: c.Policy, Jailed: c.Jailed}
}

func (c Config) mode() string {
	if c.ApprovalMode == "" {
		return approvals.ModeOn
	}
	return c.ApprovalMode
}

func (c Config) validate() error {
	switch {
	case c.JobID == "":
		return errors.New("approval config: no job id")
	case !filepath.IsAbs(c.Workspace):
		return fmt.Errorf("approval config: workspace %q is not absolute", c.Workspace)
	case !filepath.IsAbs(c.StateDir):
		return fmt.Errorf("approval config: state dir %q is not absolute", c.StateDir)
	case c.Timeout <= 0:
		return fmt.Errorf("approval config: timeout %s must be positive", c.Timeout)
	case c.mode() != approvals.ModeOn && c.mode() != approvals.ModeOff:
		return fmt.Errorf("approval config: approval mode %q is neither %q nor %q", c.ApprovalMode, approvals.ModeOn, approvals.ModeOff)
	case c.Ledger != "" && !filepath.IsAbs(c.Ledger):
		return fmt.Errorf("approval config: ledger %q is not absolute", c.Ledger)
	}
	return nil
}
