package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"
)

// errKeyRejected: DeepSeek refused the key (401/403).
var errKeyRejected = errors.New("rejected")

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
			if key != s.c.cfg.APIKey {
				if err := s.set("DEEPSEEK_API_KEY", key); err != nil {
					return err
				}
			}
			fmt.Fprintf(s.e.Stdout, "key: %s\n", verdict)
			return nil
		}
		fmt.Fprintf(s.e.Stdout, "key: %v\n", err)
		if !errors.Is(err, errKeyRejected) || !s.interactive || fromStdin || tries >= 2 {
			return errors.New("key: not written (see above); run `bridgectl setup` again with a working key")
		}
	}
}

// probeKey asks DeepSeek whether key works: GET /models (401: rejected), then
// GET /user/balance (is_available false: nothing to spend). It returns what
// it found in words, or an error that says what to do.
func (s *setup) probeKey(ctx context.Context, key string) (string, error) {
	base := s.c.cfg.DeepSeekBaseURL
	code, body, err := s.get(ctx, base+"/models", key)
	switch {
	case err != nil:
		return "", fmt.Errorf("cannot reach %s (%v) — check the network or DEEPSEEK_BASE_URL", base, err)
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
