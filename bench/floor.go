package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/deepseek"
)

// FloorClient sends deepseek_flash's upstream request straight to the
// double — the same body bytes the bridge sends for the same task — and
// reads the streamed answer as a direct client would. Its latency is the
// floor the bridge's is compared with. Safe for concurrent use.
type FloorClient struct {
	url  string
	key  string
	hc   *http.Client
	body []byte
}

// NewFloorClient builds the request the bridge would send for task (mode
// analyze, no files) with model and maxTokens, aimed at baseURL.
func NewFloorClient(baseURL, key, model string, maxTokens int, task string, hc *http.Client) (*FloorClient, error) {
	system, err := deepseek.SystemPrompt(deepseek.ModeAnalyze)
	if err != nil {
		return nil, err
	}
	body, err := chatBody(model, system, maxTokens, task)
	if err != nil {
		return nil, err
	}
	return &FloorClient{url: strings.TrimRight(baseURL, "/") + "/chat/completions", key: key, hc: hc, body: body}, nil
}

// Do sends the request once and returns the answer's text.
func (f *FloorClient) Do(ctx context.Context) (string, error) {
	resp, err := postChat(ctx, f.hc, f.url, f.key, f.body)
	if err != nil {
		return "", err
	}
	defer drain(resp.Body)
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return "", fmt.Errorf("double: HTTP %d: %s", resp.StatusCode, bytes.TrimSpace(b))
	}
	return readChatStream(resp.Body)
}

// postChat sends a streamed chat request as the bridge does: the key as a
// bearer token, a JSON body, SSE accepted.
func postChat(ctx context.Context, hc *http.Client, url, key string, body []byte) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	return hc.Do(req)
}

// readChatStream folds chat.completion.chunk events into the answer text,
// up to data: [DONE].
func readChatStream(r io.Reader) (string, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 16<<10), maxMessage)
	var text strings.Builder
	var chunk struct {
		Choices []struct {
			Delta struct {
				Content *string `json:"content"`
			} `json:"delta"`
		} `json:"choices"`
	}
	for sc.Scan() {
		line := sc.Bytes()
		data, ok := bytes.CutPrefix(line, []byte("data:"))
		if !ok {
			continue
		}
		data = bytes.TrimSpace(data)
		if string(data) == "[DONE]" {
			if text.Len() == 0 {
				return "", errors.New("double: stream ended with no content")
			}
			return text.String(), nil
		}
		chunk.Choices = chunk.Choices[:0]
		if err := json.Unmarshal(data, &chunk); err != nil {
			return "", fmt.Errorf("double: chunk is not JSON: %w", err)
		}
		for _, c := range chunk.Choices {
			if c.Delta.Content != nil {
				text.WriteString(*c.Delta.Content)
			}
		}
	}
	if err := sc.Err(); err != nil {
		return "", fmt.Errorf("double: stream: %w", err)
	}
	return "", errors.New("double: stream ended before [DONE]")
}
