package cli

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/config"
)

// errKeyRejected: DeepSeek refused the key (401/403).
var errKeyRejected = errors.New("rejected")

// errUnreachable: the API did not answer at all.
var errUnreachable = errors.New("cannot reach")

// baseURL asks for DEEPSEEK_BASE_URL (flag answers without asking); it is
// written with the key, once probed or kept unprobed.
func (s *setup) baseURL(flag string) error {
	def := cmp.Or(s.c.cfg.DeepSeekBaseURL, config.DefaultDeepSeekBaseURL)
	for {
		ans := flag
		if ans == "" {
			var err error
			if ans, err = s.ask("base URL: the DeepSeek API (OpenAI-compatible)", def); err != nil {
				return err
			}
		}
		ans = strings.TrimRight(strings.TrimSpace(ans), "/")
		u, err := url.Parse(ans)
		if err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != "" && u.User == nil {
			s.base = ans
			return nil
		}
		if flag != "" || !s.interactive {
			return usageError{fmt.Sprintf("setup --base-url %q: want http(s)://host[:port][/path], without credentials", ans)}
		}
		fmt.Fprintln(s.e.Stdout, "  want http(s)://host[:port][/path], without credentials")
	}
}

// writeEndpoint writes the key (when it is new) and the base URL into the .env.
func (s *setup) writeEndpoint(key string) error {
	if key != s.c.cfg.APIKey {
		if err := s.set("DEEPSEEK_API_KEY", key); err != nil {
			return err
		}
	}
	if v, inEnv := s.e.Getenv("DEEPSEEK_BASE_URL"); inEnv && strings.TrimRight(strings.TrimSpace(v), "/") == s.base {
		// The same value exported: the file gets it too, without a warning.
		if err := s.c.setEnv("DEEPSEEK_BASE_URL", s.base); err != nil {
			return err
		}
		return s.c.reread()
	}
	return s.set("DEEPSEEK_BASE_URL", s.base)
}

// keepUnprobedKey asks whether to keep a key the API could not be asked about.
func (s *setup) keepUnprobedKey() (bool, error) {
	if s.keepUnprobed {
		return true, nil
	}
	if !s.interactive {
		return false, nil
	}
	a, err := s.choose("key: keep it unprobed and go on with the other steps (yes), or stop here (no)", "", "no", []string{"yes", "no"})
	return a == "yes", err
}

// key asks for DEEPSEEK_API_KEY (Enter keeps the current one), probes it and
// writes it. It never prints the key. Without a terminal the key comes from
// stdin (fromStdin) or is the current one.
func (s *setup) key(ctx context.Context, fromStdin bool) error {
	for tries := 0; ; tries++ {
		key := s.c.cfg.APIKey
		switch {
		case fromStdin:
			k, err := s.readKey()
			if err != nil {
				return fmt.Errorf("read the key from stdin: %w", err)
			}
			key = k
		case s.interactive:
			def := "Enter keeps the current one"
			if key == "" {
				def = "none set: paste it (platform.deepseek.com → API keys)"
			}
			fmt.Fprintf(s.e.Stdout, "key: DeepSeek API key, typed without echo [%s]: ", def)
			s.e.Flush()
			k, err := s.readKey()
			if err != nil {
				return fmt.Errorf("read the key: %w", err)
			}
			if k != "" {
				key = k
			}
		}
		if key == "" {
			return errors.New("key: no DEEPSEEK_API_KEY — run `bridgectl setup` on a terminal, or pipe it in with --key-stdin")
		}
		s.e.mask.add(key)
		verdict, err := s.probeKey(ctx, key)
		if err == nil {
			if err := s.writeEndpoint(key); err != nil {
				return err
			}
			fmt.Fprintf(s.e.Stdout, "key: %s\n", verdict)
			return nil
		}
		fmt.Fprintf(s.e.Stdout, "key: %v\n", err)
		if errors.Is(err, errUnreachable) {
			keep, kerr := s.keepUnprobedKey()
			if kerr != nil {
				return kerr
			}
			if keep {
				if err := s.writeEndpoint(key); err != nil {
					return err
				}
				fmt.Fprintf(s.e.Stdout, "key: kept unprobed, with DEEPSEEK_BASE_URL=%s — `bridgectl doctor` checks it once %s answers\n", s.base, s.base)
				return nil
			}
			return errors.New("key: not written (see above); check the network or the base URL and run `bridgectl setup` again (--keep-unprobed keeps the key without asking the API)")
		}
		if !errors.Is(err, errKeyRejected) || !s.interactive || fromStdin || tries >= 2 {
			return errors.New("key: not written (see above); run `bridgectl setup` again with a working key")
		}
	}
}

// probeKey asks DeepSeek whether key works: GET /models (401: rejected), then
// GET /user/balance (is_available false: nothing to spend). It returns what
// it found in words, or an error that says what to do.
func (s *setup) probeKey(ctx context.Context, key string) (string, error) {
	base := s.base
	code, body, err := s.get(ctx, base+"/models", key)
	switch {
	case err != nil:
		return "", fmt.Errorf("%w %s (%v) — check the network, or give another base URL (--base-url)", errUnreachable, base, err)
	case code == http.StatusUnauthorized || code == http.StatusForbidden:
		return "", fmt.Errorf("%w by %s (%d): check the key at platform.deepseek.com → API keys", errKeyRejected, base, code)
	case code != http.StatusOK:
		return "", fmt.Errorf("%s/models answered %d: try again later", base, code)
	}
	code, body, err = s.get(ctx, base+"/user/balance", key)
	if err != nil || code != http.StatusOK {
		return fmt.Sprintf("accepted by %s (balance not known: /user/balance answered %s)", base, statusText(code, err)), nil
	}
	var bal struct {
		IsAvailable  bool `json:"is_available"`
		BalanceInfos []struct {
			Currency     string `json:"currency"`
			TotalBalance string `json:"total_balance"`
		} `json:"balance_infos"`
	}
	if err := json.Unmarshal(body, &bal); err != nil {
		return fmt.Sprintf("accepted by %s (balance unreadable)", base), nil
	}
	if !bal.IsAvailable {
		return "", fmt.Errorf("accepted, but the balance is empty: every call would fail with 402 — top up at platform.deepseek.com, then run `bridgectl setup` again")
	}
	total := ""
	for _, b := range bal.BalanceInfos {
		total += fmt.Sprintf(", balance %s %s", b.TotalBalance, b.Currency)
	}
	return "accepted by " + base + total, nil
}

// get GETs url with the key and returns the status and up to 1 MiB of body.
func (s *setup) get(ctx context.Context, url, key string) (int, []byte, error) {
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := s.e.HTTP.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return resp.StatusCode, b, err
}
