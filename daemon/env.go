package daemon

import (
	"io"
	"os"

	"github.com/rs/zerolog"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/config"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/deepseek"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/logging"
)

// Env is what `bridge serve` and `bridge stdio` both start from: the config,
// the logger and deepseek_flash's DeepSeek client.
type Env struct {
	Config config.Config
	Log    zerolog.Logger
	Flash  *deepseek.Client
	closer io.Closer
}

// LoadEnv loads the config (envFile as --env names it, "" for the default),
// and builds the logger, tagged with cmd, and the DeepSeek client. Its
// errors are configuration the user must fix. Close the Env when done.
func LoadEnv(cmd, envFile string, stderr io.Writer) (*Env, error) {
	cfg, err := config.Load(envFile)
	if err != nil {
		return nil, err
	}
	log, closer, err := logging.New(logging.Options{File: cfg.LogFile, Level: cfg.LogLevel, Stderr: stderr, Secrets: cfg.Secrets()})
	if err != nil {
		return nil, err
	}
	log = log.With().Str("cmd", cmd).Logger()
	if cfg.IgnoredLocalEnv != "" { // a TypeScript bridge owner's ./.env: never silently skipped
		log.Warn().Msg(config.LocalEnvNote(cfg.IgnoredLocalEnv, config.ResolveEnvFile(envFile, os.LookupEnv)))
	}
	if cfg.APIKey == "" {
		log.Warn().Msg("DEEPSEEK_API_KEY is not set: the server runs, but deepseek_flash answers with an error until you set it and restart")
	}
	models, err := Catalog(cfg)
	if err != nil {
		closer.Close()
		return nil, err
	}
	flash := deepseek.NewClient(deepseek.Options{
		Price:           models.PriceOf,
		BaseURL:         cfg.DeepSeekBaseURL,
		APIKey:          cfg.APIKey,
		Model:           cfg.Model,
		MaxOutputTokens: cfg.MaxOutputTokens,
		Timeout:         cfg.FlashTimeout,
		Logger:          &log,
	})
	return &Env{Config: cfg, Log: log, Flash: flash, closer: closer}, nil
}

// Close closes the log file, if there is one.
func (e *Env) Close() error { return e.closer.Close() }
